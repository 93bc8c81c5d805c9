package main

import (
	"fmt"
	"strings"
)

// Raw bytes per row of each stored column of the deeplaked table.
var rawColBytes = map[int]int64{0: 8, 1: 4 * embDims, 2: 4 * tokenLen, 3: 4, 4: 8, 5: 8}

var colNames = map[int]string{0: "id int8", 1: "emb vector(768)", 2: "tokens int32[512]", 3: "label int4", 4: "_rowid", 5: "_xmin"}

// report renders the results as Markdown tables.
func report(r *results) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("### Run")
	p("")
	p("N = %d rows (compression variants: %d rows), %s, %d CPUs, %s, PostgreSQL %s, %s.",
		r.Rows, r.VariantRows, orUnknown(r.Machine), r.CPUs, r.GoVersion, r.PGVersion, r.Date)
	p("")

	dl, pg := r.Ingest["deeplaked"], r.Ingest["postgres"]
	p("### Ingest: COPY t FROM STDIN (FORMAT binary), one statement")
	p("")
	p("| server | rows/s | wire MB/s | raw MB/s | wall s | server CPU s | client CPU s | other CPU s | VACUUM after, s |")
	p("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, s := range []struct {
		name string
		in   ingest
	}{{"deeplaked", dl}, {"PostgreSQL", pg}} {
		p("| %s | %s | %.0f | %.0f | %.1f | %.1f | %.1f | %.1f | %.2f |", s.name, thousands(s.in.RowsPerSec()), s.in.WireMBps(), s.in.RawMBps(),
			s.in.Wall.Seconds(), s.in.ServerCPU.Seconds(), s.in.ClientCPU.Seconds(), s.in.OtherCPU.Seconds(), s.in.Settle.Seconds())
	}
	p("")
	ratio := dl.RowsPerSec() / pg.RowsPerSec()
	p("deeplaked/PostgreSQL rows/s: **%.2f×** (target ≥ 2×%s).", ratio, missed(ratio >= 2))
	gv, gp := r.Gen["vector"], r.Gen["float4[]"]
	p("The generator alone (same process, into nothing) makes %s rows/s (%.0f MB/s) of deeplaked's stream and %s rows/s (%.0f MB/s) of PostgreSQL's.",
		thousands(gv.RowsPerSec()), gv.WireMBps(), thousands(gp.RowsPerSec()), gp.WireMBps())
	p("Raw MB/s counts %d bytes a row (id 8, emb 3072, tokens 2048, label 4); wire MB/s the COPY stream, whose emb is %d bytes a row for deeplaked (pgvector binary) and %d for PostgreSQL (float4 array).",
		rawRowBytes, 4+4+4*embDims, 4+20+8*embDims)
	p("Other CPU s is what the rest of the machine (other processes, kernel writeback) used meanwhile, out of %d CPUs × wall.", r.CPUs)
	p("deeplaked's peak RSS over the run: %.0f MiB.", float64(r.DLPeak)/(1<<20))
	p("")

	p("### Full scans over the wire (simple protocol, text results; fastest of %d runs)", len(r.Scans[0].DL.Runs))
	p("")
	p("| query | deeplaked s | PostgreSQL s | speed deeplaked/PostgreSQL | server CPU s, deeplaked / PostgreSQL | other CPU s, deeplaked / PostgreSQL | result |")
	p("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
	for _, s := range r.Scans {
		p("| `%s` | %.3f | %.3f | %.2f× | %.2f / %.2f | %.2f / %.2f | %s |", s.SQL, s.DL.Wall.Seconds(), s.PG.Wall.Seconds(),
			s.PG.Wall.Seconds()/s.DL.Wall.Seconds(), s.DL.ServerCPU.Seconds(), s.PG.ServerCPU.Seconds(),
			s.DL.OtherCPU.Seconds(), s.PG.OtherCPU.Seconds(), s.DL.Result)
	}
	for _, s := range r.Scans {
		if s.Name == "emb" {
			p("")
			p("`SELECT emb`: deeplaked sends %.0f MB of text at %.0f MB/s (%.2f GB/s of raw float32); PostgreSQL %.0f MB at %.0f MB/s (%.2f GB/s raw).",
				float64(s.DL.Bytes)/1e6, float64(s.DL.Bytes)/s.DL.Wall.Seconds()/1e6, float64(r.Rows*4*embDims)/s.DL.Wall.Seconds()/1e9,
				float64(s.PG.Bytes)/1e6, float64(s.PG.Bytes)/s.PG.Wall.Seconds()/1e6, float64(r.Rows*4*embDims)/s.PG.Wall.Seconds()/1e9)
		}
	}
	p("")

	if l := r.Local; l != nil {
		p("### Storage layer: scan of emb from the data directory (page cache), one consuming goroutine")
		p("")
		p("`storage.Open` + `txn.Scan(t, emb)` after the server stopped; GB/s per core = bytes / process CPU time (chunk loads run on background goroutines, so wall GB/s can exceed it).")
		p("")
		p("| pass | GB | wall s | GB/s (wall) | CPU s | GB/s per core (CPU) | other CPU s |")
		p("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
		row := func(name string, x pass) {
			p("| %s | %.2f | %.3f | %.2f | %.3f | %.2f | %.2f |", name, float64(x.Bytes)/1e9, x.Wall.Seconds(), x.GBps(), x.CPU.Seconds(), x.GBpsCPU(), x.Other.Seconds())
		}
		row(fmt.Sprintf("scan, GOMAXPROCS=%d, warm", l.GOMAXPROCS), l.Scan)
		row(fmt.Sprintf("scan, GOMAXPROCS=%d, first run", l.GOMAXPROCS), l.ScanCold)
		row("scan, GOMAXPROCS=1, warm", l.Scan1)
		row("anchor: copy() of the same bytes, 8 MiB at a time", l.MemCopy)
		row(fmt.Sprintf("anchor: sequential read of emb's %d chunk files, 1 MiB reads", l.ReadFilesN), l.ReadFiles)
		p("")
		perCore := min(l.Scan.GBpsCPU(), l.Scan1.GBps())
		p("Scan at GOMAXPROCS=1: %.2f GB/s; per CPU-second at GOMAXPROCS=%d: %.2f GB/s (target ≥ 1 GB/s per core%s); %.0f%% of copy(), %.0f%% of reading the files.",
			l.Scan1.GBps(), l.GOMAXPROCS, l.Scan.GBpsCPU(), missed(perCore >= 1), 100*l.Scan1.GBps()/l.MemCopy.GBps(), 100*l.Scan1.GBps()/l.ReadFiles.GBps())
		p("")
	}

	p("### Bytes on disk, %d rows", r.Rows)
	p("")
	p("deeplaked, table `t` (chunk objects per column, `tables/%s/frags/*/<col>-*.dlc`; %d fragment(s)):", r.DLTable, r.DLDisk.Frags)
	p("")
	p("| column | compression | chunks | raw MB | on disk MB | disk/raw |")
	p("| --- | --- | ---: | ---: | ---: | ---: |")
	var rawSum int64
	for c := 0; c <= 5; c++ {
		size, ok := r.DLDisk.Cols[c]
		if !ok {
			continue
		}
		raw := rawColBytes[c] * r.Rows
		rawSum += raw
		comp := "lz4 (table default)"
		switch c {
		case 2:
			comp = "zstd"
		case 4, 5:
			comp = "(hidden)"
		}
		p("| %s | %s | %d | %.1f | %.1f | %.3f |", colNames[c], comp, r.DLDisk.Chunks[c], float64(raw)/1e6, float64(size)/1e6, float64(size)/float64(raw))
	}
	p("| manifests | | | | %.3f | |", float64(r.DLDisk.Manifests)/1e6)
	p("| all objects of `t` | | | %.1f | %.1f | %.3f |", float64(rawSum)/1e6, float64(r.DLDisk.Total)/1e6, float64(r.DLDisk.Total)/float64(rawSum))
	p("")
	p("Whole data directory after all tables (catalog and variants included): %.1f MB.", float64(r.DLData)/1e6)
	p("")
	d := r.PGDisk
	p("PostgreSQL, table `t`: `pg_total_relation_size` %.1f MB (heap %.1f MB, TOAST %.1f MB); `sum(pg_column_size())`: emb %.1f MB (%.3f of raw), tokens %.1f MB (%.3f of raw). deeplaked/PostgreSQL total: %.3f.",
		float64(d.Total)/1e6, float64(d.Heap)/1e6, float64(d.Toast)/1e6,
		float64(d.EmbCol)/1e6, float64(d.EmbCol)/float64(r.Rows*4*embDims), float64(d.TokensCol)/1e6, float64(d.TokensCol)/float64(r.Rows*4*tokenLen),
		float64(r.DLDisk.Total)/float64(d.Total))
	p("")

	p("### tokens by compression, deeplaked, %d rows", r.VariantRows)
	p("")
	p("| compression | tokens on disk MB | raw MB | disk/raw | ratio | ingest rows/s |")
	p("| --- | ---: | ---: | ---: | ---: | ---: |")
	var note string
	for _, v := range r.Variants {
		if v.Err != "" {
			p("| %s | failed: %s | | | | |", v.Compression, v.Err)
			continue
		}
		raw := v.Rows * 4 * tokenLen
		size := v.Disk.Cols[2]
		p("| %s | %.1f | %.1f | %.3f | %.2f | %s |", v.Compression, float64(size)/1e6, float64(raw)/1e6, float64(size)/float64(raw), float64(raw)/float64(size), thousands(v.Ingest.RowsPerSec()))
		if v.Compression == "zstd" {
			note = fmt.Sprintf("tokens with zstd: %.3f of raw (target ≤ 0.5%s).", float64(size)/float64(raw), missed(2*size <= raw))
		}
	}
	if note != "" {
		p("")
		p("%s", note)
	}
	p("")
	return b.String()
}

func missed(ok bool) string {
	if ok {
		return ": met"
	}
	return ": **missed**"
}

func orUnknown(s string) string {
	if s == "" {
		return "machine not described"
	}
	return s
}

// thousands formats f rounded, with commas.
func thousands(f float64) string {
	s := fmt.Sprintf("%.0f", f)
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}
