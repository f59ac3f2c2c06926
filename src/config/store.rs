//! The `[store]` table and store URLs: where a run's results are written when it ends
//! (`sqlite:PATH` or `postgres://USER@HOST[:PORT]/DB`, the password named, never written), parsed
//! once for the config and for `--db`.

use crate::error::BadInput;
use crate::util::printable;
use std::path::PathBuf;

/// Where results go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreUrl {
    /// `sqlite:PATH`: a file, created with its folder on first use.
    Sqlite(PathBuf),
    /// `postgres://…`: a server.
    Postgres(PgUrl),
}

/// A PostgreSQL server and database. It holds no password: only the name of the environment
/// variable that does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgUrl {
    pub user: String,
    pub host: PgHost,
    pub port: u16,
    pub dbname: String,
    /// The environment variable holding the password (`password_env`, `--password-env`); without
    /// one, `PGPASSWORD` when set, as psql does.
    pub password_env: Option<String>,
}

/// How a PostgreSQL server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PgHost {
    Tcp(String),
    /// The folder holding the server's Unix socket.
    Socket(PathBuf),
}

/// Where Debian's server puts its socket: libpq's default for a URL without a host.
const DEFAULT_SOCKET_DIR: &str = "/var/run/postgresql";

const EXPECTED: &str = "expected sqlite:PATH or postgres://USER@HOST[:PORT]/DB";

impl StoreUrl {
    /// Reads a store URL; `what` names where it came from (`store.url`, `--db`) for errors.
    pub fn parse(url: &str, what: &str) -> Result<StoreUrl, BadInput> {
        if let Some(path) = url.strip_prefix("sqlite:") {
            let path = path.strip_prefix("//").unwrap_or(path);
            if path.is_empty() {
                return Err(BadInput(format!(
                    "{what}: `sqlite:` needs a file path, as in sqlite:results/gpassk.db"
                )));
            }
            return Ok(StoreUrl::Sqlite(PathBuf::from(path)));
        }
        for scheme in ["postgres://", "postgresql://"] {
            if let Some(rest) = url.strip_prefix(scheme) {
                return parse_postgres(rest)
                    .map(StoreUrl::Postgres)
                    .map_err(|e| BadInput(format!("{what}: {e}")));
            }
        }
        // Never echo the rest: a URL may hold a password.
        let scheme = url.split(':').next().unwrap_or("");
        Err(BadInput(format!(
            "{what}: unknown store `{}:`: {EXPECTED}",
            printable(scheme)
        )))
    }

    /// This URL with the password read from `var` (PostgreSQL only: a SQLite file has none).
    pub fn with_password_env(self, var: Option<&str>, what: &str) -> Result<StoreUrl, BadInput> {
        let Some(var) = var else { return Ok(self) };
        if var.is_empty() || var.contains('=') || var.contains('\0') {
            return Err(BadInput(format!(
                "{what}: `{}` is not an environment variable name",
                printable(var)
            )));
        }
        match self {
            StoreUrl::Postgres(mut pg) => {
                pg.password_env = Some(var.to_string());
                Ok(StoreUrl::Postgres(pg))
            }
            StoreUrl::Sqlite(_) => Err(BadInput(format!(
                "{what}: a password is for postgres:// stores; a sqlite: file has none"
            ))),
        }
    }
}

/// The part of a PostgreSQL URL after `postgres://`.
fn parse_postgres(rest: &str) -> Result<PgUrl, String> {
    let (main, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (authority, db) = main.split_once('/').unwrap_or((main, ""));
    let (userinfo, hostport) = match authority.rsplit_once('@') {
        Some((u, h)) => (u, h),
        None => ("", authority),
    };
    // Before anything is echoed: a password in the URL would end up in shell history and logs.
    if userinfo.contains(':') {
        return Err(
            "a password in the URL is refused: put it in an environment variable and name it \
             with password_env (or --password-env)"
                .into(),
        );
    }
    let user = decode(userinfo, "user")?;
    if user.is_empty() {
        return Err(format!("needs a user: {EXPECTED}"));
    }
    let dbname = decode(db, "database")?;
    if dbname.is_empty() {
        return Err(format!("needs a database name: {EXPECTED}"));
    }
    let (host, port) = host_port(hostport)?;
    let mut url = PgUrl {
        user,
        host: match host {
            h if h.is_empty() => PgHost::Socket(DEFAULT_SOCKET_DIR.into()),
            h if h.starts_with('/') => PgHost::Socket(h.into()),
            h => PgHost::Tcp(h),
        },
        port: port.unwrap_or(5432),
        dbname,
        password_env: None,
    };
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let value = decode(value, key)?;
        match key {
            "host" if value.starts_with('/') => url.host = PgHost::Socket(value.into()),
            "host" if !value.is_empty() => url.host = PgHost::Tcp(value),
            "port" => url.port = port_number(&value)?,
            "sslmode" if value == "disable" => {}
            "sslmode" => {
                return Err(format!(
                    "sslmode={}: TLS is not built in; reach the server on a Unix socket, a \
                     loopback address or an SSH tunnel",
                    printable(&value)
                ))
            }
            _ => {
                return Err(format!(
                    "unknown parameter `{}`: expected host, port or sslmode=disable",
                    printable(key)
                ))
            }
        }
    }
    Ok(url)
}

/// `host`, `host:port`, `[v6]`, `[v6]:port` or `%2Fsocket%2Fdir`.
fn host_port(text: &str) -> Result<(String, Option<u16>), String> {
    let (host, port) = if let Some(v6) = text.strip_prefix('[') {
        let (addr, after) = v6
            .split_once(']')
            .ok_or_else(|| format!("host `{}`: no closing ]", printable(text)))?;
        match after.strip_prefix(':') {
            Some(p) => (addr.to_string(), Some(p)),
            None if after.is_empty() => (addr.to_string(), None),
            None => return Err(format!("host `{}`: unreadable", printable(text))),
        }
    } else {
        match text.rsplit_once(':') {
            Some((h, p)) => (decode(h, "host")?, Some(p)),
            None => (decode(text, "host")?, None),
        }
    };
    let port = port.map(port_number).transpose()?;
    Ok((host, port))
}

fn port_number(text: &str) -> Result<u16, String> {
    text.parse::<u16>()
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| format!("port `{}`: expected 1-65535", printable(text)))
}

/// Percent-decodes one part of the URL; `what` names it for errors.
fn decode(text: &str, what: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3).unwrap_or("");
            let byte = u8::from_str_radix(hex, 16)
                .map_err(|_| format!("{what}: `%{}` is not a percent escape", printable(hex)))?;
            out.push(byte);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("{what}: not UTF-8 once decoded"))
}

impl std::fmt::Display for StoreUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreUrl::Sqlite(p) => write!(f, "sqlite:{}", p.display()),
            StoreUrl::Postgres(pg) => {
                let user = printable(&pg.user);
                let db = printable(&pg.dbname);
                match &pg.host {
                    PgHost::Tcp(h) if h.contains(':') => {
                        write!(f, "postgres://{user}@[{h}]:{}/{db}", pg.port)
                    }
                    PgHost::Tcp(h) => {
                        write!(f, "postgres://{user}@{}:{}/{db}", printable(h), pg.port)
                    }
                    PgHost::Socket(dir) => write!(
                        f,
                        "postgres://{user}@/{db}?host={}&port={}",
                        printable(&dir.display().to_string()),
                        pg.port
                    ),
                }
            }
        }
    }
}

/// The resolved `[store]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreSettings {
    /// With the password variable of `password_env` in it.
    pub url: StoreUrl,
    /// `samples = true`: a run's push at its end also writes a row per sample.
    pub samples: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pg(url: &str) -> PgUrl {
        match StoreUrl::parse(url, "--db") {
            Ok(StoreUrl::Postgres(p)) => p,
            other => panic!("{url}: {other:?}"),
        }
    }

    #[test]
    fn postgres_urls_over_tcp_and_unix_sockets() {
        let p = pg("postgres://me@db.example:6543/evals");
        assert_eq!(
            (p.user.as_str(), &p.host, p.port, p.dbname.as_str()),
            ("me", &PgHost::Tcp("db.example".into()), 6543, "evals")
        );
        assert_eq!(pg("postgresql://me@localhost/evals").port, 5432);
        assert_eq!(
            pg("postgres://me@[::1]:7/x").host,
            PgHost::Tcp("::1".into())
        );
        for socket in [
            "postgres://me@%2Ftmp%2Fpg/evals",
            "postgres://me@/evals?host=/tmp/pg",
            "postgres://me@localhost/evals?host=%2Ftmp%2Fpg",
        ] {
            assert_eq!(
                pg(socket).host,
                PgHost::Socket("/tmp/pg".into()),
                "{socket}"
            );
        }
        assert_eq!(
            pg("postgres://me@/evals").host,
            PgHost::Socket(DEFAULT_SOCKET_DIR.into())
        );
        assert_eq!(pg("postgres://me@/e?host=/s&port=5433").port, 5433);
        // Display reads back as the same URL.
        for url in [
            "postgres://me@h:1/d",
            "postgres://me@/d?host=/s&port=9",
            "postgres://me@[::1]:5432/d",
        ] {
            let shown = StoreUrl::parse(url, "x").unwrap().to_string();
            assert_eq!(StoreUrl::parse(&shown, "x").unwrap().to_string(), shown);
            assert_eq!(shown, url);
        }
    }

    #[test]
    fn a_password_in_the_url_is_refused_without_being_echoed() {
        let e = StoreUrl::parse("postgres://me:hunter22@h/d", "store.url").unwrap_err();
        assert!(e.0.contains("password_env"), "{e}");
        assert!(!e.0.contains("hunter22"), "{e}");
        for (bad, says) in [
            ("postgres://h/d", "needs a user"),
            ("postgres://me@h", "needs a database"),
            ("postgres://me@h:0/d", "port `0`"),
            ("postgres://me@h:x/d", "port `x`"),
            ("postgres://me@h/d?sslmode=require", "TLS"),
            ("postgres://me@h/d?options=1", "unknown parameter `options`"),
            ("postgres://me@h/d%zz", "percent escape"),
        ] {
            let e = StoreUrl::parse(bad, "--db").unwrap_err().0;
            assert!(e.starts_with("--db: ") && e.contains(says), "{bad}: {e}");
        }
        let sqlite = StoreUrl::parse("sqlite:x.db", "--db").unwrap();
        assert!(sqlite
            .with_password_env(Some("PW"), "--password-env")
            .is_err());
    }
}
