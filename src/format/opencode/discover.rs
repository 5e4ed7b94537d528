//! Where opencode keeps its sessions: `opencode/` in the XDG data
//! directory, `$XDG_DATA_HOME` else `~/.local/share` on every platform
//! (`Global.Path.data` through `xdg-basedir`). Since 1.2 they are rows of
//! `opencode.db` (`opencode-<channel>.db` for other release channels;
//! `$OPENCODE_DB` names another file); before, files of the JSON tree
//! `storage/session/<projectID>/<sessionID>.json`. The id opencode's
//! session list shows is the `ses_…` id.

use std::path::Path;

use crate::format::discovery::{self, App, Env, Found, Session};

pub static APP: App = App {
    name: "opencode",
    key: "opencode",
    find,
    sessions,
};

fn find(env: &Env) -> Found {
    let mut found = Found::default();
    if let Some(db) = env.var("OPENCODE_DB") {
        found.looked.push(db.clone());
        if db.is_file() {
            found.inputs.push(db);
        }
    }
    let Some(data) = env.xdg_data().map(|d| d.join("opencode")) else {
        return found;
    };
    let Some(data) = found.look(data) else {
        return found;
    };
    for db in discovery::files_in(&data, |n| {
        n == "opencode.db" || (n.starts_with("opencode-") && n.ends_with(".db"))
    }) {
        if !found.inputs.contains(&db) {
            found.inputs.push(db);
        }
    }
    let tree = data.join("storage").join("session");
    if tree.is_dir() {
        found
            .inputs
            .extend(discovery::files_under(&tree, |n| n.ends_with(".json")));
    }
    found
}

fn sessions(path: &Path) -> Vec<Session> {
    if path.extension().is_some_and(|e| e == "json") {
        return discovery::one_session(APP.name, path, discovery::stem(path, ".json"));
    }
    discovery::sessions_in_db(APP.name, path, "SELECT id, time_updated FROM session")
}
