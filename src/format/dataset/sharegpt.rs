//! ShareGPT turns (`{"from": ..., "value": ...}`), translated into the
//! OpenAI message each stands for, so that the rules read them as they
//! read any OpenAI message log.
//!
//! The role tags are the ones the trainers that read ShareGPT accept
//! (LLaMA-Factory's `human`, `gpt`, `system`, `function_call`,
//! `observation`, and the `user`/`assistant`/`tool` spellings). A
//! `function_call` turn's value is a JSON object (`name`, `arguments`) or
//! an array of them (parallel calls); ShareGPT has no call ids, so each
//! call is given one by position (`call_<turn>_<k>`) and each
//! `observation` answers the oldest call still unanswered, as the turns
//! are laid out. An observation with no call before it answers none: its
//! id (`observation_<turn>`) names no call.

use std::collections::VecDeque;

use serde::Deserialize;
use serde_json::{Value, json};

/// The calls made and not yet answered, in order.
#[derive(Default)]
pub struct Calls {
    open: VecDeque<String>,
}

#[derive(Deserialize)]
struct Turn {
    from: Option<Value>,
    value: Option<Value>,
}

impl Calls {
    /// The OpenAI message turn `k` (`text`) stands for, or why it is not one.
    pub fn translate(&mut self, text: &str, k: usize) -> Result<String, String> {
        let turn: Turn = serde_json::from_str(text).map_err(|_| {
            "is not a ShareGPT turn (an object with `from` and `value`)".to_string()
        })?;
        let from = match turn.from {
            Some(Value::String(s)) => s,
            Some(_) => return Err("has a `from` that is not a string".into()),
            None => return Err("has no `from` role tag".into()),
        };
        let value = turn.value.unwrap_or(Value::Null);
        let msg = match from.as_str() {
            "human" | "user" => json!({"role": "user", "content": value}),
            "gpt" | "assistant" => json!({"role": "assistant", "content": value}),
            "system" => json!({"role": "system", "content": value}),
            "function_call" => {
                let calls = self.calls(&value, k);
                json!({"role": "assistant", "content": null, "tool_calls": calls})
            }
            "observation" | "tool" | "function_response" => {
                let id = self
                    .open
                    .pop_front()
                    .unwrap_or_else(|| format!("observation_{k}"));
                json!({"role": "tool", "tool_call_id": id, "content": value})
            }
            other => {
                return Err(format!("has unknown role tag `{other}`"));
            }
        };
        Ok(msg.to_string())
    }

    /// The calls a `function_call` turn's value makes, each given an id.
    fn calls(&mut self, value: &Value, k: usize) -> Vec<Value> {
        // The value is the calls' JSON, kept in a string.
        let parsed = match value {
            Value::String(s) => serde_json::from_str::<Value>(s).ok(),
            v => Some(v.clone()),
        };
        let list = match parsed {
            Some(Value::Array(items)) => items,
            Some(v @ Value::Object(_)) => vec![v],
            // Not a call: its text stands as the arguments, which the
            // arguments rule then reads as what they are.
            _ => vec![json!({"name": "", "arguments": value})],
        };
        list.into_iter()
            .enumerate()
            .map(|(n, call)| {
                let id = format!("call_{k}_{n}");
                self.open.push_back(id.clone());
                let name = call.get("name").cloned().unwrap_or(Value::Null);
                let arguments = match call.get("arguments") {
                    Some(Value::String(s)) => Value::String(s.clone()),
                    Some(v) => Value::String(v.to_string()),
                    None => Value::String("{}".into()),
                };
                json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
            })
            .collect()
    }
}
