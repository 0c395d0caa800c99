//! Pub/Sub commands (redis.io/commands/?group=pubsub): SUBSCRIBE,
//! UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, PUBLISH, SSUBSCRIBE, SUNSUBSCRIBE,
//! SPUBLISH and PUBSUB CHANNELS / NUMSUB / NUMPAT / SHARDCHANNELS /
//! SHARDNUMSUB / HELP.
//!
//! The registry and delivery live in [`crate::pubsub`]; these handlers parse
//! arguments and reply as Redis 7.0's pubsub.c (flags, arities and key specs
//! as redis-server 7.0.15's COMMAND INFO). Shard channels work without
//! cluster mode, as in Redis: a separate namespace delivered by SPUBLISH
//! only.

use super::behaviour;
use super::keyspecs;
use super::{cmd, container, flags::*, Command, Ctx};
use crate::pubsub::{self, Kind};
use crate::resp::Args;

const SUB_FLAGS: u64 = PUBSUB | NOSCRIPT | LOADING | STALE;
/// PUBLISH, SPUBLISH: with Redis 7.0's (unlisted) may-replicate flag
/// (CLIENT PAUSE WRITE holds them back).
const PUB_FLAGS: u64 = PUBSUB | LOADING | STALE | FAST | MAY_REPLICATE;
const INTRO_FLAGS: u64 = PUBSUB | LOADING | STALE;

/// PUBSUB subcommands.
static PUBSUB_SUBS: &[Command] = &[
    // Redis 7.0.15's order (COMMAND INFO lists subcommands this way).
    cmd("pubsub|channels", -2, INTRO_FLAGS, (0, 0, 0), 0, pubsub_channels).doc(
        "pubsub",
        "2.8.0",
        "List active channels",
        "O(N) where N is the number of active channels, and assuming constant time pattern matching (relatively short channels and patterns)",
    ),
    cmd(
        "pubsub|shardnumsub",
        -2,
        INTRO_FLAGS,
        (0, 0, 0),
        0,
        pubsub_shardnumsub,
    )
    .doc(
        "pubsub",
        "7.0.0",
        "Get the count of subscribers for shard channels",
        "O(N) for the SHARDNUMSUB subcommand, where N is the number of requested shard channels",
    ),
    cmd(
        "pubsub|shardchannels",
        -2,
        INTRO_FLAGS,
        (0, 0, 0),
        0,
        pubsub_shardchannels,
    )
    .doc(
        "pubsub",
        "7.0.0",
        "List active shard channels",
        "O(N) where N is the number of active shard channels, and assuming constant time pattern matching (relatively short shard channels).",
    ),
    cmd("pubsub|help", 2, LOADING | STALE, (0, 0, 0), 0, pubsub_help).doc(
        "pubsub",
        "6.2.0",
        "Show helpful text about the different subcommands",
        "O(1)",
    ),
    cmd("pubsub|numpat", 2, INTRO_FLAGS, (0, 0, 0), 0, pubsub_numpat).doc(
        "pubsub",
        "2.8.0",
        "Get the count of unique patterns pattern subscriptions",
        "O(1)",
    ),
    cmd("pubsub|numsub", -2, INTRO_FLAGS, (0, 0, 0), 0, pubsub_numsub).doc(
        "pubsub",
        "2.8.0",
        "Get the count of subscribers for channels",
        "O(N) for the NUMSUB subcommand, where N is the number of requested channels",
    ),
];

/// The Pub/Sub family's table entries.
pub static COMMANDS: &[Command] = &[
    cmd("subscribe", -2, SUB_FLAGS, (0, 0, 0), 0, subscribe).behaves(behaviour::CHANNEL_ARGS).behaves(behaviour::SUBSCRIBED_OK).doc(
        "pubsub",
        "2.0.0",
        "Listen for messages published to the given channels",
        "O(N) where N is the number of channels to subscribe to.",
    ),
    cmd("unsubscribe", -1, SUB_FLAGS, (0, 0, 0), 0, unsubscribe).behaves(behaviour::SUBSCRIBED_OK).doc(
        "pubsub",
        "2.0.0",
        "Stop listening for messages posted to the given channels",
        "O(N) where N is the number of clients already subscribed to a channel.",
    ),
    cmd("psubscribe", -2, SUB_FLAGS, (0, 0, 0), 0, psubscribe).behaves(behaviour::PATTERN_ARGS).behaves(behaviour::SUBSCRIBED_OK).doc(
        "pubsub",
        "2.0.0",
        "Listen for messages published to channels matching the given patterns",
        "O(N) where N is the number of patterns the client is already subscribed to.",
    ),
    cmd("punsubscribe", -1, SUB_FLAGS, (0, 0, 0), 0, punsubscribe).behaves(behaviour::SUBSCRIBED_OK).doc(
        "pubsub",
        "2.0.0",
        "Stop listening for messages posted to channels matching the given patterns",
        "O(N+M) where N is the number of patterns the client is already subscribed and M is the number of total patterns subscribed in the system (by any client).",
    ),
    cmd("publish", 3, PUB_FLAGS, (0, 0, 0), 0, publish).behaves(behaviour::CHANNEL_ARG1)
        .doc(
            "pubsub",
            "2.0.0",
            "Post a message to a channel",
            "O(N+M) where N is the number of clients subscribed to the receiving channel and M is the total number of subscribed patterns (by any client).",
        ),
    container("pubsub", 0, PUBSUB_SUBS).doc(
        "pubsub",
        "2.8.0",
        "A container for Pub/Sub commands",
        "Depends on subcommand.",
    ),
    cmd("spublish", 3, PUB_FLAGS, (1, 1, 1), 0, spublish).key_specs(keyspecs::SPUBLISH).behaves(behaviour::CHANNEL_ARG1)
        .doc(
            "pubsub",
            "7.0.0",
            "Post a message to a shard channel",
            "O(N) where N is the number of clients subscribed to the receiving shard channel.",
        )
        .key_flags(&["not_key"]),
    cmd("ssubscribe", -2, SUB_FLAGS, (1, -1, 1), 0, ssubscribe).key_specs(keyspecs::SSUBSCRIBE).behaves(behaviour::CHANNEL_ARGS).behaves(behaviour::SUBSCRIBED_OK)
        .doc(
            "pubsub",
            "7.0.0",
            "Listen for messages published to the given shard channels",
            "O(N) where N is the number of shard channels to subscribe to.",
        )
        .key_flags(&["not_key"]),
    cmd("sunsubscribe", -1, SUB_FLAGS, (1, -1, 1), 0, sunsubscribe).key_specs(keyspecs::SSUBSCRIBE).behaves(behaviour::SUBSCRIBED_OK)
        .doc(
            "pubsub",
            "7.0.0",
            "Stop listening for messages posted to the given shard channels",
            "O(N) where N is the number of clients already subscribed to a shard channel.",
        )
        .key_flags(&["not_key"]),
];

fn names<'a>(args: &Args<'a>) -> Vec<&'a [u8]> {
    (1..args.len()).map(|i| args.get(i)).collect()
}

fn do_subscribe(ctx: &mut Ctx<'_>, args: &Args<'_>, kind: Kind) {
    let n = names(args);
    pubsub::subscribe(
        &ctx.server.pubsub_env(),
        &ctx.client.handle,
        &mut ctx.client.pubsub,
        ctx.out,
        kind,
        &n,
    );
}

fn do_unsubscribe(ctx: &mut Ctx<'_>, args: &Args<'_>, kind: Kind) {
    let n = names(args);
    pubsub::unsubscribe(
        &ctx.server.pubsub_env(),
        &ctx.client.handle,
        &mut ctx.client.pubsub,
        ctx.out,
        kind,
        &n,
    );
}

/// SUBSCRIBE channel [channel ...]: one confirmation per channel
/// [subscribe, channel, count of channels + patterns].
fn subscribe(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    do_subscribe(ctx, args, Kind::Channel);
}

/// UNSUBSCRIBE [channel ...]: one confirmation per channel (all subscribed
/// channels when none is given; [unsubscribe, null, count] when there are
/// none).
fn unsubscribe(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    do_unsubscribe(ctx, args, Kind::Channel);
}

/// PSUBSCRIBE pattern [pattern ...].
fn psubscribe(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    do_subscribe(ctx, args, Kind::Pattern);
}

/// PUNSUBSCRIBE [pattern ...].
fn punsubscribe(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    do_unsubscribe(ctx, args, Kind::Pattern);
}

/// SSUBSCRIBE shardchannel [shardchannel ...]: confirmations count shard
/// channels only.
fn ssubscribe(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    // Redis 7.0 ssubscribeCommand: unlike SUBSCRIBE / PSUBSCRIBE, not
    // allowed from EXEC (a CLIENT_DENY_BLOCKING client).
    if ctx.client.deny_blocking {
        return ctx.error("ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client");
    }
    do_subscribe(ctx, args, Kind::Shard);
}

/// SUNSUBSCRIBE [shardchannel ...].
fn sunsubscribe(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    do_unsubscribe(ctx, args, Kind::Shard);
}

/// PUBLISH channel message: the number of receivers.
fn publish(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let n = pubsub::publish(&ctx.server.pubsub_env(), args.get(1), args.get(2));
    if ctx.server.cluster.enabled {
        // Every node's subscribers get it (cluster.c clusterPropagatePublish).
        crate::cmd::cluster::bus::propagate_publish(ctx.server, args.get(1), args.get(2));
    } else {
        to_replicas(ctx, args);
    }
    ctx.out.int(n as i64);
}

/// SPUBLISH shardchannel message: the number of receivers.
fn spublish(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let n = pubsub::spublish(&ctx.server.pubsub_env(), args.get(1), args.get(2));
    if ctx.server.cluster.enabled {
        // The shard's other nodes (cluster.c clusterPropagatePublishShard).
        crate::cmd::cluster::bus::propagate_publish_shard(ctx.server, args.get(1), args.get(2));
    } else {
        to_replicas(ctx, args);
    }
    ctx.out.int(n as i64);
}

/// Outside cluster mode a master sends PUBLISH and SPUBLISH to its replicas
/// (not to the AOF), whose subscribers then get the message
/// (pubsub.c publishCommand: `forceCommandPropagation(c, PROPAGATE_REPL)`).
fn to_replicas(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let r = &ctx.server.repl;
    if r.backlog.active() && !r.backlog.replica_mode() {
        ctx.server.propagation.replicas_only(ctx.client.db, args);
    }
}

fn list(ctx: &mut Ctx<'_>, args: &Args<'_>, shard: bool) {
    if args.len() > 3 {
        return ctx.sub_syntax(args, "PUBSUB");
    }
    let pat = (args.len() == 3).then(|| args.get(2));
    let v = ctx.server.pubsub.list(shard, pat);
    ctx.out.array(v.len());
    for c in &v {
        ctx.out.bulk(c);
    }
}

/// PUBSUB CHANNELS [pattern]: active channels (with at least one
/// subscriber), optionally matching the glob.
fn pubsub_channels(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    list(ctx, args, false);
}

/// PUBSUB SHARDCHANNELS [pattern].
fn pubsub_shardchannels(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    list(ctx, args, true);
}

fn numsub(ctx: &mut Ctx<'_>, args: &Args<'_>, shard: bool) {
    ctx.out.array((args.len() - 2) * 2);
    for i in 2..args.len() {
        let c = args.get(i);
        ctx.out.bulk(c);
        let n = ctx.server.pubsub.numsub(shard, c);
        ctx.out.int(n as i64);
    }
}

/// PUBSUB NUMSUB [channel ...]: flat array of channel, subscriber count
/// (pattern subscribers not counted).
fn pubsub_numsub(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    numsub(ctx, args, false);
}

/// PUBSUB SHARDNUMSUB [shardchannel ...].
fn pubsub_shardnumsub(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    numsub(ctx, args, true);
}

/// PUBSUB NUMPAT: number of distinct patterns subscribed to.
fn pubsub_numpat(ctx: &mut Ctx<'_>, _args: &Args<'_>) {
    let n = ctx.server.pubsub.pattern_count();
    ctx.out.int(n as i64);
}

fn pubsub_help(ctx: &mut Ctx<'_>, _args: &Args<'_>) {
    super::server::reply_help(
        ctx,
        "PUBSUB",
        &[
            "CHANNELS [<pattern>]",
            "    Return the currently active channels matching a <pattern> (default: '*').",
            "NUMPAT",
            "    Return number of subscriptions to patterns.",
            "NUMSUB [<channel> ...]",
            "    Return the number of subscribers for the specified channels, excluding",
            "    pattern subscriptions(default: no channels).",
            "SHARDCHANNELS [<pattern>]",
            "    Return the currently active shard level channels matching a <pattern> (default: '*').",
            "SHARDNUMSUB [<shardchannel> ...]",
            "    Return the number of subscribers for the specified shard level channel(s)",
        ],
    );
}
