//! tokio-postgres on the shapes of bench/pg/shapes.hpp, for bench/pg/run.sh.
//!   tokio_pg_bench DSN SCALE ROUND [CONNS=1] [DEPTH=64]
//! One JSON line per (shape, client) on stdout, the format merge.py reads. Clients:
//!   tokio_pg_seq   one query awaited after another on each connection;
//!   tokio_pg_pipe  DEPTH queries in flight on each connection (tokio-postgres pipelines
//!                  requests whose futures are polled concurrently; one Sync each).
//! Every statement is prepared (typed parameters) before the timing; results are binary
//! and every field of every row is converted into a Rust value. A single-threaded runtime
//! drives the CONNS connections (as inlet drives its connections on one io_context).
use futures_util::stream::{self, StreamExt};
use std::time::Instant;
use tokio_postgres::types::Type;
use tokio_postgres::{Client, NoTls, Statement};

const PG_TYPE_SQL: &str = "SELECT typname, typnamespace, typowner, typlen, typbyval, typcategory, \
    typispreferred, typisdefined, typdelim, typrelid, typelem, typarray FROM pg_type \
    WHERE typtypmod = $1 AND typisdefined = $2";

/// (name, SQL, parameter types, base operation count, statements per operation)
fn shapes() -> Vec<(&'static str, &'static str, Vec<Type>, u64, u64)> {
    vec![
        ("select1", "SELECT 1+1", vec![], 4000, 1),
        ("pg_type", PG_TYPE_SQL, vec![Type::INT4, Type::BOOL], 300, 1),
        ("series1000", "SELECT i FROM generate_series(1, 1000) AS i", vec![], 800, 1),
        ("bytea100", "SELECT b FROM bench_bytes", vec![], 1500, 1),
        ("intarr100", "SELECT a FROM bench_arrays", vec![], 800, 1),
        ("insert1000", "INSERT INTO bench_ins (a, b) VALUES ($1, $2)", vec![Type::INT4, Type::TEXT], 6, 1000),
    ]
}

fn cpu_seconds() -> f64 {
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let s = u.ru_utime.tv_sec + u.ru_stime.tv_sec;
    let us = u.ru_utime.tv_usec + u.ru_stime.tv_usec;
    s as f64 + us as f64 / 1e6
}

/// One statement of a shape (for insert1000, statement `i` inserts row `i`); returns a
/// checksum over the converted values so that nothing is optimised away.
async fn statement(c: &Client, st: &Statement, shape: &str, i: u64) -> u64 {
    let mut n: u64 = 0;
    match shape {
        "insert1000" => {
            let a = i as i32;
            let b = format!("row {}", i);
            n += c.execute(st, &[&a, &b]).await.expect("insert");
        }
        "pg_type" => {
            for r in c.query(st, &[&-1i32, &true]).await.expect("pg_type") {
                let typname: String = r.get(0);
                let typnamespace: u32 = r.get(1);
                let typowner: u32 = r.get(2);
                let typlen: i16 = r.get(3);
                let typbyval: bool = r.get(4);
                let typcategory: i8 = r.get(5);
                let typispreferred: bool = r.get(6);
                let typisdefined: bool = r.get(7);
                let typdelim: i8 = r.get(8);
                let typrelid: u32 = r.get(9);
                let typelem: u32 = r.get(10);
                let typarray: u32 = r.get(11);
                n += typname.len() as u64 + typnamespace as u64 + typowner as u64 + typlen as u64
                    + typbyval as u64 + typcategory as u64 + typispreferred as u64 + typisdefined as u64
                    + typdelim as u64 + typrelid as u64 + typelem as u64 + typarray as u64;
            }
        }
        "bytea100" => {
            for r in c.query(st, &[]).await.expect("bytea") {
                let b: Vec<u8> = r.get(0);
                n += b.len() as u64;
            }
        }
        "intarr100" => {
            for r in c.query(st, &[]).await.expect("intarr") {
                let a: Vec<i32> = r.get(0);
                n += a.len() as u64 + a[0] as u64;
            }
        }
        _ => {
            // select1, series1000: one int4 column
            for r in c.query(st, &[]).await.expect("query") {
                let v: i32 = r.get(0);
                n += v as u64;
            }
        }
    }
    n
}

/// Statements k, k+conns, k+2*conns, ... below `total`, on one connection, `depth` in flight.
async fn run_one(c: &Client, st: &Statement, shape: &str, k: u64, conns: u64, total: u64, depth: usize) -> u64 {
    let idx = (k..total).step_by(conns as usize);
    if depth <= 1 {
        let mut n = 0;
        for i in idx {
            n += statement(c, st, shape, i).await;
        }
        n
    } else {
        stream::iter(idx)
            .map(|i| statement(c, st, shape, i))
            .buffer_unordered(depth)
            .fold(0u64, |a, b| async move { a + b })
            .await
    }
}

async fn connect(dsn: &str) -> Client {
    let (client, conn) = tokio_postgres::connect(dsn, NoTls).await.expect("connect");
    tokio::spawn(async move {
        if let Err(e) = conn.await {
            eprintln!("tokio_pg_bench: connection: {}", e);
        }
    });
    client
}

async fn bench(dsn: &str, scale: f64, round: u32, conns: u64, depth: usize) {
    let mut checksum = 0u64;
    for (name, sql, types, base, batch) in shapes() {
        let ops = std::cmp::max(1, (base as f64 * scale) as u64);
        let clients: &[(&str, usize)] = if conns == 1 {
            &[("tokio_pg_seq", 1), ("tokio_pg_pipe", 0)]
        } else {
            &[("tokio_pg_seq", 1)]
        };
        for &(client, d) in clients {
            let d = if d == 0 { depth } else { d };
            // Fresh connections per client and shape, prepared and warmed outside the timing.
            let mut cs = Vec::new();
            for _ in 0..conns {
                let c = connect(dsn).await;
                let st = c.prepare_typed(sql, &types).await.expect("prepare");
                checksum += statement(&c, &st, name, 0).await;
                cs.push((c, st));
            }
            let total = ops * batch;
            let (c0, t0) = (cpu_seconds(), Instant::now());
            let runs = cs.iter().enumerate().map(|(k, (c, st))| run_one(c, st, name, k as u64, conns, total, d));
            checksum += futures_util::future::join_all(runs).await.iter().sum::<u64>();
            let wall = t0.elapsed().as_secs_f64();
            let cpu = cpu_seconds() - c0;
            println!(
                "{{\"round\": {}, \"shape\": \"{}\", \"client\": \"{}\", \"conns\": {}, \"ops_per_s\": {}, \"cpu_us_per_op\": {}}}",
                round, name, client, conns, ops as f64 / wall, cpu * 1e6 / ops as f64
            );
        }
    }
    eprintln!("(checksum {})", checksum);
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a.len() < 4 {
        eprintln!("usage: tokio_pg_bench DSN SCALE ROUND [CONNS] [DEPTH]");
        std::process::exit(2);
    }
    let scale: f64 = a[2].parse().expect("SCALE");
    let round: u32 = a[3].parse().expect("ROUND");
    let conns: u64 = a.get(4).map(|s| s.parse().expect("CONNS")).unwrap_or(1);
    let depth: usize = a.get(5).map(|s| s.parse().expect("DEPTH")).unwrap_or(64);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    rt.block_on(bench(&a[1], scale, round, conns, depth));
}
