//! One client's private state as the command layer sees it: the selected
//! database, the reply mode, authentication and ACL user, MULTI, WATCH,
//! subscriptions, tracking, a blocked wait and pending streamed replies.
//! Every command handler gets it through its `Ctx`; the connection loop
//! (net/connection.rs) and in-process callers (the AOF loader, tests)
//! create it for the connections they run.

use crate::clients::ClientHandle;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// CLIENT REPLY state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyMode {
    /// Replies are sent.
    On,
    /// All replies dropped until CLIENT REPLY ON.
    Off,
    /// CLIENT REPLY SKIP was just executed (its own reply is dropped).
    SkipNext,
    /// The next command's reply is dropped.
    Skip,
}

/// A connection's private state, passed to every command handler.
pub struct Client {
    /// The shared part (registry entry).
    pub handle: Arc<ClientHandle>,
    /// Selected database index.
    pub db: usize,
    /// CLIENT REPLY mode.
    pub reply_mode: ReplyMode,
    /// True once AUTH succeeded (or when no password is required).
    pub authenticated: bool,
    /// The ACL user of the connection.
    pub acl: crate::acl::ClientAcl,
    /// Close after the pending replies are written (QUIT, protocol error).
    pub close_after_reply: bool,
    /// CLIENT NO-TOUCH.
    pub no_touch: bool,
    /// Id of the last command executed (CLIENT LIST cmd=).
    pub last_cmd: usize,
    /// Id of the last top-level command looked up (dispatch cache).
    pub last_top: usize,
    /// Wall clock in µs at the start of the next command (see cmd::execute).
    pub clock_us: u64,
    /// Set by MONITOR: the receiver of the monitor feed.
    pub monitor_rx: Option<tokio::sync::mpsc::UnboundedReceiver<Vec<u8>>>,
    /// Set by a blocking command (BLPOP...) that registered a waiter instead
    /// of replying: the connection stops executing commands and waits for
    /// the wake-up, the timeout or the socket closing.
    pub blocked: Option<Blocked>,
    /// Set by a command held back by CLIENT PAUSE (pause.rs): the request,
    /// run by the connection once the pause is over.
    pub postponed: Option<crate::resp::parse::OwnedArgs>,
    /// When set (inside MULTI/EXEC, scripts), blocking commands must not
    /// block: they behave as their non-blocking forms and reply null when
    /// there is nothing to pop (Redis's CLIENT_DENY_BLOCKING).
    pub deny_blocking: bool,
    /// MULTI state: Some between MULTI and EXEC/DISCARD (tx.rs).
    pub multi: Option<crate::tx::MultiState>,
    /// Keys watched by WATCH (tx.rs).
    pub watch: Option<Box<crate::tx::Watching>>,
    /// The client's channel, pattern and shard-channel subscriptions; Some
    /// while it has at least one (Redis's CLIENT_PUBSUB: subscribed mode).
    pub pubsub: Option<Box<crate::pubsub::ClientSubs>>,
    /// CLIENT TRACKING is on (mirror of the handle's flag for the request
    /// path; tracking.rs).
    pub tracking: bool,
    /// True for a connection that can produce large replies chunk by
    /// chunk (set by [`serve`]; internal clients build replies at once).
    pub can_stream: bool,
    /// Replies left for the connection to produce (cmd/stream.rs), in the
    /// order they go into the output buffer.
    pub streams: Vec<crate::cmd::stream::PendingStream>,
    /// Set by PSYNC / SYNC: after the command the connection becomes a
    /// replica's (cmd/repl/master.rs).
    pub repl_sync: Option<crate::cmd::repl::SyncRequest>,
    /// What REPLCONF said before PSYNC.
    pub repl_conf: Option<Box<crate::cmd::repl::master::ReplConf>>,
    /// Set by a WAIT that must wait for acknowledgements.
    pub repl_wait: Option<crate::cmd::repl::WaitRequest>,
    /// The master client of a replica's link: its writes are the
    /// master's (exempt from replica-read-only).
    pub is_master: bool,
    /// The AOF loader's client: with the master's, its commands are obeyed
    /// as sent (Redis's `mustObeyClient`).
    pub aof_loading: bool,
    /// ASKING was sent: the next command may touch a slot this node
    /// imports (cluster mode; cleared after that command).
    pub asking: bool,
    /// READONLY was sent: reads of the slots of this replica's master are
    /// served here (cluster mode).
    pub cluster_readonly: bool,
    /// Bytes in the connection's read buffer when the current batch began
    /// (unexecuted requests included) and its free space: CLIENT LIST /
    /// INFO `qbuf` and `qbuf-free` of the client's own line, which in
    /// Redis still counts the running command. Set once per read.
    pub qbuf: (usize, usize),
    /// Capacity of the connection's reply buffer (`rbs`), set once per
    /// read.
    pub rbs: usize,
}

/// A client waiting on keys: its waiter, where the wake-up arrives and the
/// deadline (None = forever).
pub struct Blocked {
    /// The registration (in the key queues and in the client handle).
    pub waiter: Arc<crate::db::blocking::Waiter>,
    /// Receives the served reply or a CLIENT UNBLOCK.
    pub rx: tokio::sync::oneshot::Receiver<crate::db::blocking::Wake>,
    /// When the wait times out.
    pub deadline: Option<std::time::Instant>,
}

impl Client {
    /// A fresh client state for `handle`.
    pub fn new(handle: Arc<ClientHandle>) -> Self {
        Client {
            handle,
            db: 0,
            reply_mode: ReplyMode::On,
            authenticated: false,
            acl: Default::default(),
            close_after_reply: false,
            no_touch: false,
            last_cmd: usize::MAX,
            last_top: usize::MAX,
            clock_us: crate::util::now_us(),
            monitor_rx: None,
            blocked: None,
            postponed: None,
            deny_blocking: false,
            multi: None,
            watch: None,
            pubsub: None,
            tracking: false,
            can_stream: false,
            streams: Vec::new(),
            repl_sync: None,
            repl_conf: None,
            repl_wait: None,
            is_master: false,
            aof_loading: false,
            asking: false,
            cluster_readonly: false,
            qbuf: (0, 0),
            rbs: 0,
        }
    }

    /// True when a reply may be produced chunk by chunk after the command:
    /// a connection whose replies go straight to its socket (not through
    /// the outbox shared with pushed messages of a subscribed or tracking
    /// client).
    pub fn streams_replies(&self) -> bool {
        self.can_stream
            && self.pubsub.is_none()
            && !self.tracking
            && !self.handle.tracking.target.load(Ordering::Relaxed)
    }
}
