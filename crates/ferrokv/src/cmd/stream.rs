//! Replies produced a chunk at a time: SRANDMEMBER, HRANDFIELD and
//! ZRANDMEMBER with a negative count draw |count| elements with
//! repetitions, so one command can ask for a reply of exabytes. Redis
//! builds such a reply in memory and stops only when the client's output
//! buffer limit closes it (its loops check CLIENT_CLOSE_ASAP); with the
//! default unlimited normal class it grows until memory runs out.
//!
//! Here the command writes the reply header, copies the elements it draws
//! from into a [`RandomPicks`] (so the reply is a view of the key at the
//! time of the command, whatever happens to it meanwhile) and leaves it in
//! [`Client::streams`](crate::cmd::client::Client); the connection
//! then produces the reply in chunks of [`CHUNK`] bytes, sending each and
//! yielding to the other connections of its thread between chunks
//! (`net::connection::drive_streams`). The client's output buffer limits
//! apply to the whole reply as if it were buffered, as in Redis: past the
//! hard limit the client is closed (and logged); below it nothing is sent
//! until the reply is complete. With no limit the reply streams for as
//! long as the client reads it, in bounded memory.
//!
//! Contexts that cannot stream (a subscribed or tracking client, whose
//! replies share the outbox with pushed messages; the AOF loader) build the
//! reply at once, bounded by the output buffer limit and, when the class
//! has none, by `proto-max-bulk-len`: past it the client is closed with a
//! log line.

use crate::resp::Out;
use crate::util::rand_u64;

/// Bytes of reply produced per step.
pub const CHUNK: usize = 64 * 1024;

/// Above this many elements a repeated-sampling reply is streamed rather
/// than built at once.
pub const STREAM_ABOVE: u64 = 4096;

/// How the drawn elements are written.
#[derive(Debug, Clone, Copy)]
pub enum Shape {
    /// SRANDMEMBER: each element a bulk string.
    Members,
    /// HRANDFIELD: the field, and with `values` its value (RESP3: a
    /// [field, value] pair).
    Pairs {
        /// WITHVALUES.
        values: bool,
    },
    /// ZRANDMEMBER: the member, and with `scores` its score (RESP3: a
    /// [member, score] pair).
    Scored {
        /// WITHSCORES.
        scores: bool,
    },
}

/// A repeated-sampling reply in progress: a copy of the key's elements
/// (member bytes back to back with their end offsets; hash values follow
/// their field; sorted-set scores beside) and how many draws remain.
#[derive(Debug)]
pub struct RandomPicks {
    data: Vec<u8>,
    ends: Vec<usize>,
    scores: Vec<f64>,
    shape: Shape,
    remaining: u64,
}

impl RandomPicks {
    /// An empty copy that will draw `count` elements.
    pub fn new(shape: Shape, count: u64) -> Self {
        RandomPicks {
            data: Vec::new(),
            ends: Vec::new(),
            scores: Vec::new(),
            shape,
            remaining: count,
        }
    }

    /// Adds one element (for [`Shape::Pairs`], call it for the field and
    /// then for the value).
    pub fn push(&mut self, bytes: &[u8]) {
        self.data.extend_from_slice(bytes);
        self.ends.push(self.data.len());
    }

    /// Adds one sorted-set member with its score.
    pub fn push_scored(&mut self, member: &[u8], score: f64) {
        self.push(member);
        self.scores.push(score);
    }

    fn part(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.data[start..self.ends[i]]
    }

    /// Number of elements to draw from.
    fn elements(&self) -> usize {
        match self.shape {
            Shape::Pairs { .. } => self.ends.len() / 2,
            _ => self.ends.len(),
        }
    }

    /// Bytes of the copy (counted as part of the reply being produced).
    pub fn copy_size(&self) -> usize {
        self.data.len() + self.ends.len() * 8 + self.scores.len() * 8
    }

    /// Writes draws to `out` until it has grown by `budget` bytes or none
    /// remain; true when the reply is complete.
    pub fn fill(&mut self, out: &mut Out, budget: usize) -> bool {
        let n = self.elements() as u64;
        if n == 0 {
            return true;
        }
        let start = out.buf.len();
        while self.remaining > 0 && out.buf.len() - start < budget {
            self.remaining -= 1;
            let i = (rand_u64() % n) as usize;
            match self.shape {
                Shape::Members => out.bulk(self.part(i)),
                Shape::Pairs { values } => {
                    if values && out.resp3 {
                        out.array(2);
                    }
                    out.bulk(self.part(2 * i));
                    if values {
                        out.bulk(self.part(2 * i + 1));
                    }
                }
                Shape::Scored { scores } => {
                    if scores && out.resp3 {
                        out.array(2);
                    }
                    out.bulk(self.part(i));
                    if scores {
                        out.double(self.scores[i]);
                    }
                }
            }
        }
        self.remaining == 0
    }
}

/// A streamed reply waiting in a client: its bytes go at offset `at` of
/// the output buffer (replies written after it, in the same EXEC, follow
/// it).
#[derive(Debug)]
pub struct PendingStream {
    /// Where in the output buffer the reply belongs.
    pub at: usize,
    /// The producer.
    pub picks: RandomPicks,
}
