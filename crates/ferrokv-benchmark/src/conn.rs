//! Target addresses and connections (TCP or Unix socket), async for the
//! load loop and blocking for setup (pre-flight checks, `CLUSTER SLOTS`).

use crate::resp::{self, Value};
use std::io::{self, Read, Write};
use std::path::PathBuf;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UnixStream};

/// Where a target listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Addr {
    /// `host:port`.
    Tcp(String),
    /// A Unix socket path (`-s`).
    Unix(PathBuf),
}

impl std::fmt::Display for Addr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Addr::Tcp(a) => f.write_str(a),
            Addr::Unix(p) => write!(f, "{}", p.display()),
        }
    }
}

/// An I/O error message without Rust's " (os error N)" suffix, the way
/// redis-cli and redis-benchmark print them.
pub fn clean_io_error(e: &io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// An open async connection.
#[derive(Debug)]
pub enum Conn {
    /// TCP, with `TCP_NODELAY` set.
    Tcp(TcpStream),
    /// Unix socket.
    Unix(UnixStream),
}

impl Conn {
    /// Connects to `addr`.
    pub async fn connect(addr: &Addr) -> io::Result<Conn> {
        Ok(match addr {
            Addr::Tcp(a) => {
                let s = TcpStream::connect(a.as_str()).await?;
                s.set_nodelay(true)?;
                Conn::Tcp(s)
            }
            Addr::Unix(p) => Conn::Unix(UnixStream::connect(p).await?),
        })
    }

    /// Reads what is available into `buf`.
    #[inline]
    pub async fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Conn::Tcp(s) => s.read(buf).await,
            Conn::Unix(s) => s.read(buf).await,
        }
    }

    /// Writes all of `buf`.
    #[inline]
    pub async fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Conn::Tcp(s) => s.write_all(buf).await,
            Conn::Unix(s) => s.write_all(buf).await,
        }
    }
}

/// A blocking connection used for setup only.
pub enum SyncConn {
    /// TCP.
    Tcp(std::net::TcpStream),
    /// Unix socket.
    Unix(std::os::unix::net::UnixStream),
}

impl SyncConn {
    /// Connects to `addr` with a timeout on every operation.
    pub fn connect(addr: &Addr, timeout: Duration) -> io::Result<SyncConn> {
        match addr {
            Addr::Tcp(a) => {
                use std::net::ToSocketAddrs;
                let mut last = io::Error::new(io::ErrorKind::NotFound, "no address");
                for sa in a.to_socket_addrs()? {
                    match std::net::TcpStream::connect_timeout(&sa, timeout) {
                        Ok(s) => {
                            s.set_read_timeout(Some(timeout))?;
                            s.set_write_timeout(Some(timeout))?;
                            return Ok(SyncConn::Tcp(s));
                        }
                        Err(e) => last = e,
                    }
                }
                Err(last)
            }
            Addr::Unix(p) => {
                let s = std::os::unix::net::UnixStream::connect(p)?;
                s.set_read_timeout(Some(timeout))?;
                s.set_write_timeout(Some(timeout))?;
                Ok(SyncConn::Unix(s))
            }
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            SyncConn::Tcp(s) => s.write_all(buf),
            SyncConn::Unix(s) => s.write_all(buf),
        }
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            SyncConn::Tcp(s) => s.read(buf),
            SyncConn::Unix(s) => s.read(buf),
        }
    }

    /// Sends one RESP command and reads its full reply.
    pub fn command(&mut self, args: &[&str]) -> anyhow::Result<Value> {
        let mut out = Vec::new();
        resp::encode_command(&mut out, args);
        self.write_all(&out)?;
        let mut buf = Vec::new();
        let mut chunk = [0u8; 16384];
        loop {
            if let Some((v, _)) = resp::parse_value(&buf)? {
                return Ok(v);
            }
            let n = self.read(&mut chunk)?;
            if n == 0 {
                anyhow::bail!("connection closed by server");
            }
            buf.extend_from_slice(&chunk[..n]);
        }
    }
}
