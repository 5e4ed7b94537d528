//! LangGraph's checkpointers (langchain-ai/langgraph): a thread's state is
//! a chain of checkpoints, each with its channel values (the `messages`
//! channel holds the conversation) and the pending writes of the step
//! after it. `sqlite`: `langgraph-checkpoint-sqlite`'s database, read and
//! repaired into a copy (`writer`); `postgres`: `langgraph-checkpoint-postgres`'s
//! tables, repaired into a script or another database (`pg_writer`). `state`: what a thread resumes from,
//! shared by the checkpointers; `serde`: LangGraph's serialised values
//! (msgpack with its ext types; pickles are never unpickled).

mod pg_writer;
pub mod postgres;
pub mod profile;
pub mod serde;
pub mod sqlite;
pub mod state;
pub mod writer;
