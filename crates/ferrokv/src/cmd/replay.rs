//! Replaying commands that come from a file rather than a client: the
//! AOF loader reads and checks the files (persist/aof/loader.rs) and hands
//! each command to [`AofReplay`], which runs it through the command table
//! with a loading client (Redis's AOF-loading fake client: a clock of 0, no
//! blocking, errors logged and counted as `afterErrorReply` does).

use super::client::Client;
use super::{table, Ctx};
use crate::persist::aof::LoadError;
use crate::resp::{Args, Out};
use crate::server::Server;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The command layer's side of AOF loading (`persist::aof::Replay`).
pub struct AofReplay {
    server: Arc<Server>,
    client: Client,
    out: Out,
    stats: Arc<crate::stats::ThreadStats>,
}

impl AofReplay {
    /// A replayer for `server`.
    pub fn new(server: &Arc<Server>) -> AofReplay {
        AofReplay {
            server: server.clone(),
            client: loading_client(server),
            out: Out::new(),
            stats: server.stats.local(table().all.len()),
        }
    }
}

/// The AOF-loading client: authenticated, never blocks.
fn loading_client(server: &Server) -> Client {
    let handle = crate::clients::new_handle(
        &server.clients,
        server.clock.now_ms(),
        "aof".into(),
        String::new(),
        -1,
        false,
    );
    let mut client = Client::new(handle);
    client.authenticated = true;
    client.deny_blocking = true;
    client.aof_loading = true;
    client
}

impl crate::persist::aof::Replay for AofReplay {
    fn begin_file(&mut self) {
        self.client = loading_client(&self.server);
    }

    fn run(&mut self, args: &Args<'_>, file: &str, offset: usize) -> Result<(), LoadError> {
        run_loaded(
            &self.server,
            &mut self.client,
            &mut self.out,
            &self.stats,
            args,
            file,
            offset,
        )
    }
}

/// A command replayed from the AOF replied with an error (`reply`, the
/// RESP error frame): logged as Redis's `afterErrorReply` does for its
/// AOF-loading client (`== CRITICAL == This server is sending an error to
/// its AOF-loading-client: '<error>' after processing the command
/// '<name>'`), counted in INFO `unexpected_error_replies`, and loading
/// stops when `propagation-error-behavior` is `panic` (Redis panics;
/// `ignore` and `panic-on-replicas` go on with the next command).
/// The text of the RESP error frame `reply` as Redis's `afterErrorReply`
/// logs it: the text the handler passed, without "ERR " for plain errors,
/// with the leading "-CODE" for errors that carry their own code; at most
/// 4096 bytes, lossily decoded.
pub(crate) fn logged_error_text(reply: &[u8]) -> String {
    let line = reply.split(|&b| b == b'\r').next().unwrap_or_default();
    let text = line.strip_prefix(b"-ERR ").unwrap_or(line);
    String::from_utf8_lossy(&text[..text.len().min(4096)]).into_owned()
}

fn loaded_command_failed(server: &Server, name: &str, reply: &[u8]) -> Result<(), LoadError> {
    let text = logged_error_text(reply);
    tracing::warn!(
        "== CRITICAL == This server is sending an error to its AOF-loading-client: '{text}' after processing the command '{name}'"
    );
    server
        .stats
        .unexpected_error_replies
        .fetch_add(1, Ordering::Relaxed);
    if server.config.read().get("propagation-error-behavior") == "panic" {
        let msg = format!(
            "This server panicked sending an error to its AOF-loading-client after processing the command '{name}'"
        );
        tracing::error!("{msg}");
        return Err(msg);
    }
    Ok(())
}

fn run_loaded(
    server: &Arc<Server>,
    client: &mut Client,
    out: &mut Out,
    stats: &crate::stats::ThreadStats,
    args: &Args<'_>,
    file: &str,
    offset: usize,
) -> Result<(), LoadError> {
    let t = table();
    let name = args.get(0);
    let Some(mut id) = t.lookup(name) else {
        let msg = format!(
            "Unknown command '{}' reading the append only file {file} at offset {offset}",
            String::from_utf8_lossy(name)
        );
        tracing::error!("{msg}");
        return Err(msg);
    };
    let mut c = t.all[id];
    if c.is_container() && args.len() >= 2 {
        if let Some(s) = t.lookup_sub(id, args.get(1)) {
            id = s;
            c = t.all[id];
        }
    }
    let argc = args.len() as i32;
    if (c.arity > 0 && argc != c.arity) || argc < -c.arity {
        let msg = format!(
            "Bad file format reading the append only file {file} at offset {offset}: wrong number of arguments for '{}'",
            c.name
        );
        tracing::error!("{msg}");
        return Err(msg);
    }
    // A clock of 0: no key expires while loading (Redis's keyIsExpired
    // returns 0 while loading); absolute expiry times are kept as logged.
    let mut ctx = Ctx {
        server,
        client,
        out,
        now: 0,
        stats,
        failed: false,
        dirty: None,
    };
    (c.handler)(&mut ctx, args);
    if ctx.failed {
        loaded_command_failed(server, c.name, &out.buf)?;
    }
    out.buf.clear();
    if crate::events::pending() {
        // Key events of loaded commands (no subscriber exists yet).
        crate::events::drain(&**server);
    }
    if let Some(b) = client.blocked.take() {
        b.waiter.claim();
        crate::db::blocking::unregister(&server.keyspace, &b.waiter);
    }
    Ok(())
}
