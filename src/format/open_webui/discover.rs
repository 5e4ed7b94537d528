//! Where Open WebUI keeps its chats: `webui.db` (SQLite) in its data
//! directory, unless `DATABASE_URL` names another database
//! (open_webui/env.py, 0.12.4: `DATABASE_URL` defaults to
//! `sqlite:///{DATA_DIR}/webui.db`; `DATA_DIR` defaults to the package's
//! own `data/` folder when started as `open-webui serve`, which sets
//! `FROM_INIT_PY`, and to `backend/data` in a source checkout or the
//! Docker image, whose volume the documented `docker run -v
//! open-webui:/app/backend/data` keeps in Docker's `volumes/open-webui/_data`).
//! A pip install lives in some Python environment: the usual places of a
//! user install, `uv tool install` and `pipx install` are looked in. A
//! `DATABASE_URL` that names PostgreSQL holds the chats in that server:
//! `chatfsck lint postgres://…` reads it; no file is found here. The id of
//! a chat is `chat.id`, the one in the web app's `/c/<id>` address.

use std::path::{Path, PathBuf};

use crate::format::discovery::{self, App, Env, Found, Os, Session};

pub static APP: App = App {
    name: "Open WebUI",
    key: "open-webui",
    find,
    sessions,
};

const DB: &str = "webui.db";

fn find(env: &Env) -> Found {
    let mut found = Found::default();
    let add = |found: &mut Found, file: PathBuf| {
        if let Some(dir) = file.parent().map(Path::to_path_buf)
            && found.look(dir).is_some()
            && file.is_file()
            && !found.inputs.contains(&file)
        {
            found.inputs.push(file);
        }
    };
    // `DATABASE_URL` decides alone when it is set.
    if let Some(url) = env.var_text("DATABASE_URL") {
        if let Some(path) = sqlite_path(&url) {
            add(&mut found, path);
        }
        return found;
    }
    if let Some(dir) = env.var("DATA_DIR") {
        add(&mut found, dir.join(DB));
        return found;
    }
    for dir in package_data_dirs(env) {
        add(&mut found, dir.join(DB));
    }
    if env.os == Os::Linux {
        add(
            &mut found,
            PathBuf::from("/var/lib/docker/volumes/open-webui/_data").join(DB),
        );
    }
    found
}

/// The file a `sqlite:///PATH` URL names (SQLAlchemy's form: three slashes
/// and a relative path, four and an absolute one); `None` for any other
/// database.
fn sqlite_path(url: &str) -> Option<PathBuf> {
    let rest = url.strip_prefix("sqlite:///")?;
    let path = rest.split('?').next().unwrap_or(rest);
    let p = PathBuf::from(path);
    (p.is_absolute() && !path.is_empty()).then_some(p)
}

/// The `open_webui/data` folders of the Python environments a user's
/// `pip install --user`, `uv tool install` and `pipx install` make.
fn package_data_dirs(env: &Env) -> Vec<PathBuf> {
    let Some(home) = env.home.as_ref() else {
        return Vec::new();
    };
    let envs: Vec<PathBuf> = match env.os {
        Os::Windows => vec![
            home.join("AppData/Roaming/uv/tools/open-webui"),
            home.join("pipx/venvs/open-webui"),
        ],
        _ => vec![
            home.join(".local"),
            home.join(".local/share/uv/tools/open-webui"),
            home.join(".local/share/pipx/venvs/open-webui"),
            home.join(".local/pipx/venvs/open-webui"),
        ],
    };
    let mut out = Vec::new();
    for root in envs {
        if env.os == Os::Windows {
            out.push(root.join("Lib/site-packages/open_webui/data"));
            continue;
        }
        // lib/python3.X/site-packages: one folder per Python version.
        for lib in discovery::dirs_in(&root.join("lib")) {
            if lib
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("python3"))
            {
                out.push(lib.join("site-packages/open_webui/data"));
            }
        }
    }
    out
}

fn sessions(path: &Path) -> Vec<Session> {
    discovery::sessions_in_db(
        APP.name,
        path,
        "SELECT CAST(id AS TEXT), updated_at * 1000 FROM chat ORDER BY rowid",
    )
}

#[cfg(test)]
mod tests {
    use super::sqlite_path;
    use std::path::PathBuf;

    #[test]
    fn only_a_sqlite_url_names_a_file() {
        assert_eq!(
            sqlite_path("sqlite:////srv/owui/webui.db"),
            Some(PathBuf::from("/srv/owui/webui.db"))
        );
        assert_eq!(sqlite_path("sqlite:///webui.db"), None);
        assert_eq!(sqlite_path("postgresql://u:p@db/owui"), None);
        assert_eq!(
            sqlite_path("sqlite:////srv/webui.db?timeout=5"),
            Some(PathBuf::from("/srv/webui.db"))
        );
    }
}
