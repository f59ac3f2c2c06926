//! The `[store]` table and store URLs: where a run's results are written when it ends
//! (`sqlite:PATH` or `postgres://USER@HOST[:PORT]/DB`, the password named, never written, TLS as
//! libpq's `sslmode` and `sslrootcert` say), parsed once for the config and for `--db`.

use crate::error::BadInput;
use crate::util::printable;
use std::net::IpAddr;
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
    /// `hostaddr=IP`: the address connected to, the host name still being the one a certificate
    /// must name (a tunnel or a pinned address, as in libpq).
    pub hostaddr: Option<IpAddr>,
    /// `sslmode=` as written; [`PgUrl::sslmode`] gives the one in force.
    pub sslmode: Option<SslMode>,
    /// `sslrootcert=PATH`: the CA certificates (PEM) a server's certificate must chain to;
    /// without it, the public roots compiled in (webpki-roots).
    pub sslrootcert: Option<PathBuf>,
}

/// libpq's `sslmode`, less `allow`: what TLS a connection uses and what it checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    /// Plaintext.
    Disable,
    /// TLS when the server offers it, else plaintext.
    Prefer,
    /// TLS; the certificate unchecked (checked as by `VerifyCa` when `sslrootcert` is given).
    Require,
    /// TLS; the certificate chains to a trusted CA, whatever host it names.
    VerifyCa,
    /// TLS; the certificate chains to a trusted CA and names the host connected to.
    VerifyFull,
}

impl SslMode {
    const ALL: [SslMode; 5] = [
        SslMode::Disable,
        SslMode::Prefer,
        SslMode::Require,
        SslMode::VerifyCa,
        SslMode::VerifyFull,
    ];

    /// Its name in a URL.
    pub fn as_str(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }

    fn parse(text: &str) -> Result<SslMode, String> {
        if let Some(mode) = SslMode::ALL.into_iter().find(|m| m.as_str() == text) {
            return Ok(mode);
        }
        let advice = if text == "allow" {
            "gpassk never tries plaintext first; use prefer, require or verify-full"
        } else {
            "expected disable, prefer, require, verify-ca or verify-full"
        };
        Err(format!("sslmode={}: {advice}", printable(text)))
    }
}

impl PgUrl {
    /// The sslmode in force. A Unix socket never uses TLS (libpq ignores sslmode there too).
    /// Without `sslmode=`: plaintext when the connection stays on this machine (the host, and
    /// `hostaddr` when given, are `localhost` or loopback addresses) and no `sslrootcert` names a
    /// CA; else `verify-full`, so logins and results never cross a network to a server that was
    /// not checked unless the URL says so.
    pub fn sslmode(&self) -> SslMode {
        let PgHost::Tcp(host) = &self.host else {
            return SslMode::Disable;
        };
        let local = is_loopback(host) && self.hostaddr.is_none_or(|ip| ip.is_loopback());
        match self.sslmode {
            Some(mode) => mode,
            None if local && self.sslrootcert.is_none() => SslMode::Disable,
            None => SslMode::VerifyFull,
        }
    }

    /// The CAs of `sslrootcert`, read and checked (`None` without one: the public CAs are
    /// trusted). The config reads them too, so a bad file stops a run before it starts.
    pub fn trusted_roots(&self) -> Result<Option<rustls::RootCertStore>, BadInput> {
        self.sslrootcert.as_deref().map(read_roots).transpose()
    }
}

/// Whether a host names this machine without DNS: `localhost` or a loopback address.
fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The largest CA file read: a bundle of every public root is about 250 KiB.
const MAX_ROOTS: u64 = 4 << 20;

/// Every certificate of a PEM file, each one a trusted CA; one-line errors name the file.
fn read_roots(path: &std::path::Path) -> Result<rustls::RootCertStore, BadInput> {
    use rustls::pki_types::{pem::PemObject, CertificateDer};
    let shown = printable(&path.display().to_string()).into_owned();
    let bad = |why: String| BadInput(format!("sslrootcert {shown}: {why}"));
    let bytes = crate::util::read_bounded(path, MAX_ROOTS)
        .map_err(|e| bad(format!("cannot read: {}", printable(&e.to_string()))))?;
    let mut roots = rustls::RootCertStore::empty();
    for (i, cert) in CertificateDer::pem_slice_iter(&bytes).enumerate() {
        let n = i + 1;
        let cert = cert.map_err(|e| bad(format!("certificate {n}: not PEM: {e}")))?;
        roots
            .add(cert)
            .map_err(|e| bad(format!("certificate {n}: not a CA gpassk can use: {e}")))?;
    }
    if roots.is_empty() {
        return Err(bad(
            "no PEM certificate (-----BEGIN CERTIFICATE-----) in it".into(),
        ));
    }
    Ok(roots)
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
        hostaddr: None,
        sslmode: None,
        sslrootcert: None,
    };
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let value = decode(value, key)?;
        match key {
            "host" if value.starts_with('/') => url.host = PgHost::Socket(value.into()),
            "host" if !value.is_empty() => url.host = PgHost::Tcp(value),
            "port" => url.port = port_number(&value)?,
            "hostaddr" => url.hostaddr = Some(ip_address(&value)?),
            "sslmode" => url.sslmode = Some(SslMode::parse(&value)?),
            "sslrootcert" if value.is_empty() => {
                return Err("sslrootcert=: needs the path of a PEM file of CA certificates".into())
            }
            "sslrootcert" => url.sslrootcert = Some(value.into()),
            _ => {
                return Err(format!(
                    "unknown parameter `{}`: expected host, hostaddr, port, sslmode or \
                     sslrootcert",
                    printable(key)
                ))
            }
        }
    }
    if url.sslmode == Some(SslMode::Disable) && url.sslrootcert.is_some() {
        return Err("sslrootcert is for TLS, and sslmode=disable turns it off".into());
    }
    Ok(url)
}

fn ip_address(text: &str) -> Result<IpAddr, String> {
    text.parse().map_err(|_| {
        format!(
            "hostaddr `{}`: expected an IP address (the host name goes in the host)",
            printable(text)
        )
    })
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
                let mut query = Vec::new();
                match &pg.host {
                    PgHost::Tcp(h) if h.contains(':') => {
                        write!(f, "postgres://{user}@[{h}]:{}/{db}", pg.port)?
                    }
                    PgHost::Tcp(h) => {
                        write!(f, "postgres://{user}@{}:{}/{db}", printable(h), pg.port)?
                    }
                    PgHost::Socket(dir) => {
                        write!(f, "postgres://{user}@/{db}")?;
                        query.push(format!("host={}", encode(&dir.display().to_string())));
                        query.push(format!("port={}", pg.port));
                    }
                }
                if let Some(ip) = pg.hostaddr {
                    query.push(format!("hostaddr={ip}"));
                }
                if let Some(mode) = pg.sslmode {
                    query.push(format!("sslmode={}", mode.as_str()));
                }
                if let Some(path) = &pg.sslrootcert {
                    query.push(format!(
                        "sslrootcert={}",
                        encode(&path.display().to_string())
                    ));
                }
                if !query.is_empty() {
                    write!(f, "?{}", query.join("&"))?;
                }
                Ok(())
            }
        }
    }
}

/// A query value as it reads back: printable, with the characters the URL gives a meaning
/// percent-encoded.
fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in printable(value).chars() {
        match c {
            '%' | '&' | ' ' => out.push_str(&format!("%{:02X}", c as u32)),
            c => out.push(c),
        }
    }
    out
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
            (
                "postgres://me@h/d?sslmode=verify",
                "sslmode=verify: expected disable",
            ),
            (
                "postgres://me@h/d?sslmode=allow",
                "never tries plaintext first",
            ),
            (
                "postgres://me@h/d?sslrootcert=",
                "sslrootcert=: needs the path",
            ),
            (
                "postgres://me@h/d?sslmode=disable&sslrootcert=ca.pem",
                "sslmode=disable turns it off",
            ),
            ("postgres://me@h/d?hostaddr=db.lan", "hostaddr `db.lan`"),
            ("postgres://me@h/d?options=1", "unknown parameter `options`"),
            ("postgres://me@h/d%zz", "percent escape"),
        ] {
            let e = StoreUrl::parse(bad, "--db").unwrap_err().0;
            assert!(e.starts_with("--db: ") && e.contains(says), "{bad}: {e}");
        }
        let sqlite = StoreUrl::parse("sqlite:x.db", "--db").unwrap();
        let e = StoreUrl::parse("postgres://me@h/d?sslmode=x%0A", "--db").unwrap_err();
        assert_eq!(e.0.lines().count(), 1, "{e}");
        assert!(sqlite
            .with_password_env(Some("PW"), "--password-env")
            .is_err());
    }

    #[test]
    fn sslmode_defaults_to_verify_full_off_this_machine_and_to_plaintext_on_it() {
        for (url, mode) in [
            ("postgres://me@db.example/d", SslMode::VerifyFull),
            ("postgres://me@10.0.0.7/d", SslMode::VerifyFull),
            ("postgres://me@[2001:db8::1]/d", SslMode::VerifyFull),
            ("postgres://me@localhost/d", SslMode::Disable),
            ("postgres://me@LocalHost/d", SslMode::Disable),
            ("postgres://me@127.0.0.1/d", SslMode::Disable),
            ("postgres://me@127.4.5.6/d", SslMode::Disable),
            ("postgres://me@[::1]/d", SslMode::Disable),
            ("postgres://me@/d?host=/tmp/pg", SslMode::Disable),
            // A tunnel to a remote server: the host named is remote, and so is the far end.
            (
                "postgres://me@db.example/d?hostaddr=127.0.0.1",
                SslMode::VerifyFull,
            ),
            // A local name connected to a remote address leaves the machine.
            (
                "postgres://me@localhost/d?hostaddr=10.1.2.3",
                SslMode::VerifyFull,
            ),
            (
                "postgres://me@localhost/d?hostaddr=127.0.0.1",
                SslMode::Disable,
            ),
            (
                "postgres://me@db.example/d?sslmode=require",
                SslMode::Require,
            ),
            // A CA named is one to check.
            (
                "postgres://me@localhost/d?sslrootcert=ca.pem",
                SslMode::VerifyFull,
            ),
            ("postgres://me@db.example/d?sslmode=prefer", SslMode::Prefer),
            (
                "postgres://me@localhost/d?sslmode=verify-ca",
                SslMode::VerifyCa,
            ),
            (
                "postgres://me@127.0.0.1/d?sslmode=verify-full",
                SslMode::VerifyFull,
            ),
            (
                "postgres://me@db.example/d?sslmode=disable",
                SslMode::Disable,
            ),
            // libpq ignores sslmode on a Unix socket: TLS is for networks.
            (
                "postgres://me@/d?host=/s&sslmode=verify-full",
                SslMode::Disable,
            ),
        ] {
            assert_eq!(pg(url).sslmode(), mode, "{url}");
        }
        let p = pg("postgres://me@db.example/d?hostaddr=%3A%3A1&sslrootcert=%2Fetc%2Fca.pem");
        assert_eq!(p.hostaddr, Some("::1".parse().unwrap()));
        assert_eq!(p.sslrootcert, Some(PathBuf::from("/etc/ca.pem")));
    }

    #[test]
    fn tls_parameters_read_back_from_the_url_shown() {
        for url in [
            "postgres://me@db.example:5432/d?sslmode=verify-full&sslrootcert=/etc/pg/ca.pem",
            "postgres://me@db.example:5432/d?hostaddr=127.0.0.1&sslmode=require",
            "postgres://me@/d?host=/s&port=9&sslmode=disable",
            "postgres://me@h:1/d?sslrootcert=ca%20dir/a%26b%25.pem",
        ] {
            let shown = StoreUrl::parse(url, "x").unwrap().to_string();
            assert_eq!(shown, url);
            assert_eq!(StoreUrl::parse(&shown, "x").unwrap().to_string(), shown);
        }
        let StoreUrl::Postgres(p) =
            StoreUrl::parse("postgres://me@h:1/d?sslrootcert=ca%20dir/a%26b%25.pem", "x").unwrap()
        else {
            unreachable!()
        };
        assert_eq!(p.sslrootcert, Some(PathBuf::from("ca dir/a&b%.pem")));
    }
}
