//! Build conversations in memory for unit tests.
use std::path::PathBuf;
use std::sync::Arc;

use super::*;

pub struct B {
    pub conv: Conversation,
}

pub fn conv(dialect: Dialect) -> B {
    let source = Arc::new(SourceInfo {
        path: PathBuf::from("t.jsonl"),
        format: Format::Jsonl,
        dialect,
    });
    B {
        conv: Conversation::new("t", source),
    }
}

impl B {
    fn next_loc(&self) -> Loc {
        let line = self.conv.messages.len() as u64 + 1;
        Loc::Line {
            line,
            start: 0,
            end: 0,
        }
    }
    pub fn msg(mut self, role: Role, parts: Vec<PartKind>) -> Self {
        let loc = self.next_loc();
        let mut m = Message::new(role, loc.clone());
        for p in parts {
            m.push(p, loc.clone());
        }
        self.conv.messages.push(m);
        self
    }
    pub fn user(self, text: &str) -> Self {
        self.msg(Role::User, vec![text_part(text)])
    }
    pub fn assistant(self, text: &str) -> Self {
        self.msg(Role::Assistant, vec![text_part(text)])
    }
    pub fn calls(self, ids: &[&str]) -> Self {
        let parts = ids.iter().map(|id| call(id, "Shell", "{}")).collect();
        self.msg(Role::Assistant, parts)
    }
    pub fn result(self, id: &str) -> Self {
        self.msg(Role::Tool, vec![result(id, "ok", None)])
    }
    pub fn build(self) -> Conversation {
        self.conv
    }
}

pub fn text_part(t: &str) -> PartKind {
    PartKind::Text { text: t.into() }
}
pub fn call(id: &str, name: &str, args: &str) -> PartKind {
    PartKind::ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: Arguments {
            raw: args.into(),
            encoding: ArgEncoding::JsonString,
        },
    }
}
pub fn result(id: &str, content: &str, is_error: Option<bool>) -> PartKind {
    PartKind::ToolResult {
        call_id: id.into(),
        content: content.into(),
        is_error,
    }
}
