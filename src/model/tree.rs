//! The message tree of an app that keeps a conversation as one document
//! of messages linked both ways (each message's `parentId` and its
//! `childrenIds`) and a pointer to the message shown last (Open WebUI's
//! `history = {messages: {id: …}, currentId}`), with the walk its client
//! makes: from the current message up the parent links to the root. A side
//! view beside `messages`, which hold what that walk reaches; rules read
//! both. The store computes the walk; this holds its outcome.

use super::Loc;

/// One stored message of the tree.
#[derive(Debug, Clone)]
pub struct TreeNode {
    /// Where it is stored (its key in the document).
    pub loc: Loc,
    /// The key it is stored under.
    pub key: String,
    /// Its own `id`, when it has a string one.
    pub id: Option<String>,
    /// Its `parentId` (`None`: null, absent or empty: a root).
    pub parent: Option<String>,
    /// Its `childrenIds`, as stored (strings only).
    pub children: Vec<String>,
    /// Its `role` (`None`: absent, empty or not a string).
    pub role: Option<String>,
    /// Its `timestamp` (seconds), when it has one.
    pub timestamp: Option<f64>,
}

/// How the walk from the current message ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TreeEnd {
    /// At a message whose `parentId` is null: the root. Nothing is lost.
    Root,
    /// The document names no current message (an empty conversation).
    NoCurrent,
    /// The current message pointer names a message the tree does not hold.
    MissingCurrent { missing: String },
    /// At node `at`, whose `parentId` names a message the tree does not
    /// hold: what is above it is left out.
    MissingParent { at: usize, missing: String },
    /// At node `at`, whose `parentId` (node `parent`) is already on the
    /// walk: the links form a cycle, and a walk that follows them never
    /// ends.
    Cycle { at: usize, parent: usize },
}

/// The tree and the walk.
#[derive(Debug, Clone, Default)]
pub struct Tree {
    /// Every stored message, in document order.
    pub nodes: Vec<TreeNode>,
    /// Where the current-message pointer is stored.
    pub current_loc: Option<Loc>,
    /// The current-message pointer, as stored.
    pub current: Option<String>,
    /// The nodes the walk visits, root first.
    pub path: Vec<usize>,
    pub end: Option<TreeEnd>,
    /// `childrenIds` entries that name no stored message: (node, id).
    pub dangling_children: Vec<(usize, String)>,
    /// What the store calls a message's parent link and the pointer the
    /// walk starts from, when not `parentId` and `currentId` (llm's
    /// message store: `parent_hash`, `tip_message_hash`).
    pub links: Option<(&'static str, &'static str)>,
    /// The store's writer can leave a message with no parts out of the
    /// walk (llm's message store, whose repaired messages are written
    /// again under new hashes): `empty-message` then offers to.
    pub drops_empty: bool,
}

impl Tree {
    /// Whether node `i` is on the walk.
    pub fn on_path(&self, i: usize) -> bool {
        self.path.contains(&i)
    }

    /// The names of the parent link and of the current-message pointer.
    pub fn link_names(&self) -> (&'static str, &'static str) {
        self.links.unwrap_or(("parentId", "currentId"))
    }

    /// How many messages the walk reaches, of how many stored.
    pub fn kept(&self) -> (usize, usize) {
        (self.path.len(), self.nodes.len())
    }
}
