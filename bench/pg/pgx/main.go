// pgx v5 on the shapes of bench/pg/shapes.hpp, for bench/pg/run.sh.
//
//	pgx_bench DSN SCALE ROUND [CONNS=1] [DEPTH=64]
//
// One JSON line per (shape, client) on stdout, the format merge.py reads. Clients:
//
//	pgx_seq    conn.Query / conn.Exec one after another on each connection;
//	pgx_batch  pgx.Batch of DEPTH statements per round trip (pgx sends one Sync per
//	           batch, so a batch of INSERTs is one implicit transaction: not the same
//	           commit work as one Sync per statement).
//
// pgx's default QueryExecModeCacheStatement prepares each SQL text once per connection
// and asks for binary results; the statement is warmed before the timing. Every field of
// every row is scanned into a Go value. CONNS connections run as CONNS goroutines.
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

const pgTypeSQL = "SELECT typname, typnamespace, typowner, typlen, typbyval, typcategory, " +
	"typispreferred, typisdefined, typdelim, typrelid, typelem, typarray FROM pg_type " +
	"WHERE typtypmod = $1 AND typisdefined = $2"

type shape struct {
	name, sql string
	base      int
	batch     int // statements per operation
}

var shapes = []shape{
	{"select1", "SELECT 1+1", 4000, 1},
	{"pg_type", pgTypeSQL, 300, 1},
	{"series1000", "SELECT i FROM generate_series(1, 1000) AS i", 800, 1},
	{"bytea100", "SELECT b FROM bench_bytes", 1500, 1},
	{"intarr100", "SELECT a FROM bench_arrays", 800, 1},
	{"insert1000", "INSERT INTO bench_ins (a, b) VALUES ($1, $2)", 6, 1000},
}

func cpuSeconds() float64 {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		panic(err)
	}
	return float64(u.Utime.Sec+u.Stime.Sec) + float64(u.Utime.Usec+u.Stime.Usec)/1e6
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgx_bench:", err)
		os.Exit(1)
	}
}

// args of statement i of a shape (insert1000: statement i inserts row i).
func args(s *shape, i int) []any {
	switch s.name {
	case "pg_type":
		return []any{int32(-1), true}
	case "insert1000":
		return []any{int32(i), "row " + strconv.Itoa(i)}
	}
	return nil
}

// readRows converts every field of every row into a Go value; returns a checksum.
func readRows(s *shape, rows pgx.Rows) uint64 {
	var n uint64
	defer rows.Close()
	for rows.Next() {
		switch s.name {
		case "pg_type":
			var typname string
			var typnamespace, typowner, typrelid, typelem, typarray uint32
			var typlen int16
			var typbyval, typispreferred, typisdefined bool
			var typcategory, typdelim byte
			must(rows.Scan(&typname, &typnamespace, &typowner, &typlen, &typbyval, &typcategory,
				&typispreferred, &typisdefined, &typdelim, &typrelid, &typelem, &typarray))
			n += uint64(len(typname)) + uint64(typnamespace) + uint64(typowner) + uint64(typlen) +
				uint64(typcategory) + uint64(typdelim) + uint64(typrelid) + uint64(typelem) + uint64(typarray)
			if typbyval && typispreferred && typisdefined {
				n++
			}
		case "bytea100":
			var b []byte
			must(rows.Scan(&b))
			n += uint64(len(b))
		case "intarr100":
			var a []int32
			must(rows.Scan(&a))
			n += uint64(len(a)) + uint64(a[0])
		default: // select1, series1000: one int4
			var v int32
			must(rows.Scan(&v))
			n += uint64(v)
		}
	}
	must(rows.Err())
	return n
}

func statement(ctx context.Context, c *pgx.Conn, s *shape, i int) uint64 {
	if s.name == "insert1000" {
		tag, err := c.Exec(ctx, s.sql, args(s, i)...)
		must(err)
		return uint64(tag.RowsAffected())
	}
	rows, err := c.Query(ctx, s.sql, args(s, i)...)
	must(err)
	return readRows(s, rows)
}

// run issues statements k, k+conns, ... below total on one connection.
func run(ctx context.Context, c *pgx.Conn, s *shape, k, conns, total, depth int) uint64 {
	var n uint64
	if depth <= 1 {
		for i := k; i < total; i += conns {
			n += statement(ctx, c, s, i)
		}
		return n
	}
	for i := k; i < total; {
		b := &pgx.Batch{}
		for j := 0; j < depth && i < total; j++ {
			b.Queue(s.sql, args(s, i)...)
			i += conns
		}
		br := c.SendBatch(ctx, b)
		for j := 0; j < b.Len(); j++ {
			if s.name == "insert1000" {
				tag, err := br.Exec()
				must(err)
				n += uint64(tag.RowsAffected())
			} else {
				rows, err := br.Query()
				must(err)
				n += readRows(s, rows)
			}
		}
		must(br.Close())
	}
	return n
}

func main() {
	if len(os.Args) < 4 {
		fmt.Fprintln(os.Stderr, "usage: pgx_bench DSN SCALE ROUND [CONNS] [DEPTH]")
		os.Exit(2)
	}
	dsn := os.Args[1]
	scale, err := strconv.ParseFloat(os.Args[2], 64)
	must(err)
	round, err := strconv.Atoi(os.Args[3])
	must(err)
	conns, depth := 1, 64
	if len(os.Args) > 4 {
		conns, err = strconv.Atoi(os.Args[4])
		must(err)
	}
	if len(os.Args) > 5 {
		depth, err = strconv.Atoi(os.Args[5])
		must(err)
	}
	ctx := context.Background()
	var checksum uint64
	for si := range shapes {
		s := &shapes[si]
		ops := max(1, int(float64(s.base)*scale))
		type client struct {
			name  string
			depth int
		}
		clients := []client{{"pgx_seq", 1}, {"pgx_batch", depth}}
		if conns > 1 {
			clients = clients[:1]
		}
		for _, cl := range clients {
			cs := make([]*pgx.Conn, conns)
			for k := range cs {
				cs[k], err = pgx.Connect(ctx, dsn)
				must(err)
				checksum += statement(ctx, cs[k], s, 0) // prepares and warms
			}
			total := ops * s.batch
			sums := make([]uint64, conns)
			c0, t0 := cpuSeconds(), time.Now()
			var wg sync.WaitGroup
			for k := range cs {
				wg.Add(1)
				go func(k int) {
					defer wg.Done()
					sums[k] = run(ctx, cs[k], s, k, conns, total, cl.depth)
				}(k)
			}
			wg.Wait()
			wall, cpu := time.Since(t0).Seconds(), cpuSeconds()-c0
			for k := range cs {
				checksum += sums[k]
				must(cs[k].Close(ctx))
			}
			fmt.Printf("{\"round\": %d, \"shape\": \"%s\", \"client\": \"%s\", \"conns\": %d, \"ops_per_s\": %g, \"cpu_us_per_op\": %g}\n",
				round, s.name, cl.name, conns, float64(ops)/wall, cpu*1e6/float64(ops))
		}
	}
	fmt.Fprintf(os.Stderr, "(checksum %d)\n", checksum)
}
