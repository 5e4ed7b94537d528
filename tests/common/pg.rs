//! The throwaway PostgreSQL server of the tests that need one
//! (`CHATFSCK_TEST_PG`, a superuser URL; scripts/test-all starts the
//! server, .ci/postgres.sh): fresh databases on it, and URLs as chatfsck
//! shows them.

use postgres::{Client, NoTls};

/// The superuser URL of the throwaway server.
pub fn admin() -> String {
    std::env::var("CHATFSCK_TEST_PG")
        .ok()
        .filter(|u| !u.is_empty())
        .expect("CHATFSCK_TEST_PG is not set: these tests need a superuser URL of a throwaway PostgreSQL server (scripts/test-all starts one)")
}

/// `base` with its database replaced by `db`.
pub fn with_db(base: &str, db: &str) -> String {
    let (head, _) = base.rsplit_once('/').expect("postgres://…/db");
    format!("{head}/{db}")
}

/// The URL of database `name` on the throwaway server.
pub fn url(name: &str) -> String {
    with_db(&admin(), name)
}

/// A new, empty database `name` (dropped first if there), or a copy of
/// `template` (a database is copied only while no session is connected
/// to it); its URL.
pub fn fresh(name: &str, template: Option<&str>) -> String {
    let mut c = Client::connect(&admin(), NoTls).unwrap();
    c.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .unwrap();
    match template {
        Some(t) => c
            .batch_execute(&format!("CREATE DATABASE {name} TEMPLATE {t}"))
            .unwrap(),
        None => c.batch_execute(&format!("CREATE DATABASE {name}")).unwrap(),
    }
    url(name)
}

/// The URL as chatfsck shows it: without its password.
pub fn shown(url: &str) -> String {
    let cfg: postgres::Config = url.parse().unwrap();
    let host = match &cfg.get_hosts()[0] {
        postgres::config::Host::Tcp(h) => h.clone(),
        #[allow(unreachable_patterns)]
        _ => unreachable!(),
    };
    format!(
        "postgres://{}@{host}:{}/{}",
        cfg.get_user().unwrap(),
        cfg.get_ports()[0],
        cfg.get_dbname().unwrap()
    )
}

/// The password of a URL.
pub fn password(url: &str) -> String {
    let cfg: postgres::Config = url.parse().unwrap();
    String::from_utf8(cfg.get_password().unwrap_or_default().to_vec()).unwrap()
}
