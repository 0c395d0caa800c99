//! Criterion micro-benchmarks for the request path: the RESP parser over a
//! pipeline, the reply encoder, and GET/SET execution through the command
//! table against a keyspace (no network). Run with
//! `cargo bench -p ferrokv --bench hot_path`.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use ferrokv::clients::new_handle;
use ferrokv::cmd::client::Client;
use ferrokv::config::Config;
use ferrokv::resp::{Out, OwnedArgs, Parsed, RequestParser};
use ferrokv::server::Server;
use std::hint::black_box;

fn pipeline(n: usize) -> Vec<u8> {
    let mut v = Vec::new();
    for i in 0..n {
        let key = format!("key:{i:012}");
        if i % 2 == 0 {
            v.extend_from_slice(
                format!(
                    "*3\r\n$3\r\nSET\r\n${}\r\n{key}\r\n$3\r\nxxx\r\n",
                    key.len()
                )
                .as_bytes(),
            );
        } else {
            v.extend_from_slice(
                format!("*2\r\n$3\r\nGET\r\n${}\r\n{key}\r\n", key.len()).as_bytes(),
            );
        }
    }
    v
}

fn parser(c: &mut Criterion) {
    let input = pipeline(100);
    let mut g = c.benchmark_group("parser");
    g.throughput(Throughput::Elements(100));
    g.bench_function("pipeline_100_get_set", |b| {
        let mut p = RequestParser::default();
        b.iter(|| {
            let mut pos = 0;
            let mut n = 0;
            while let Ok(Parsed::Request(used)) = p.parse(&input[pos..]) {
                n += p.args(&input[pos..]).len();
                pos += used;
            }
            black_box(n)
        })
    });
    g.finish();
}

fn encoder(c: &mut Criterion) {
    let mut g = c.benchmark_group("encoder");
    g.throughput(Throughput::Elements(100));
    g.bench_function("bulk_int_array_x100", |b| {
        let mut out = Out::new();
        b.iter(|| {
            out.buf.clear();
            for i in 0..100i64 {
                match i % 3 {
                    0 => out.bulk(b"some value bytes"),
                    1 => out.int(i * 12345),
                    _ => {
                        out.array(2);
                        out.null();
                        out.ok();
                    }
                }
            }
            black_box(out.buf.len())
        })
    });
    g.finish();
}

fn execution(c: &mut Criterion) {
    ferrokv::cmd::init();
    let server = Server::new(Config::default(), 1);
    let handle = new_handle(
        &server.clients,
        server.clock.now_ms(),
        "127.0.0.1:1".into(),
        "127.0.0.1:2".into(),
        -1,
        false,
    );
    let mut client = Client::new(handle);
    client.authenticated = true;
    let stats = server.stats.local(ferrokv::cmd::table().all.len());
    let mut out = Out::new();
    let keys: Vec<String> = (0..10_000).map(|i| format!("key:{i:012}")).collect();
    let sets: Vec<OwnedArgs> = keys
        .iter()
        .map(|k| {
            let mut a = OwnedArgs::default();
            a.push(b"SET");
            a.push(k.as_bytes());
            a.push(b"xxxxxxxxxx");
            a
        })
        .collect();
    let gets: Vec<OwnedArgs> = keys
        .iter()
        .map(|k| {
            let mut a = OwnedArgs::default();
            a.push(b"GET");
            a.push(k.as_bytes());
            a
        })
        .collect();
    let mut g = c.benchmark_group("execute");
    g.throughput(Throughput::Elements(1));
    let mut i = 0;
    g.bench_function("set_10k_keys", |b| {
        b.iter_batched(
            || (),
            |_| {
                i = (i + 1) % sets.len();
                out.buf.clear();
                ferrokv::cmd::execute(&server, &mut client, &mut out, &sets[i].args(), &stats);
            },
            BatchSize::SmallInput,
        )
    });
    g.bench_function("get_10k_keys", |b| {
        b.iter(|| {
            i = (i + 1) % gets.len();
            out.buf.clear();
            ferrokv::cmd::execute(&server, &mut client, &mut out, &gets[i].args(), &stats);
            black_box(out.buf.len())
        })
    });
    g.finish();
}

criterion_group!(benches, parser, encoder, execution);
criterion_main!(benches);
