package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// report prints the result lines of a run (JSON lines, other lines
// skipped) as two Markdown tables: building, then searching.
func report(in io.Reader, w io.Writer) error {
	var rs []result
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var r result
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return fmt.Errorf("%q: %w", line, err)
		}
		rs = append(rs, r)
	}
	if err := sc.Err(); err != nil {
		return err
	}

	fmt.Fprintln(w, "\n| system | step | parameters | rows | seconds | size | note |")
	fmt.Fprintln(w, "| --- | --- | --- | ---: | ---: | ---: | --- |")
	for _, r := range rs {
		if r.Phase == "search" {
			continue
		}
		secs, size, note := fmt.Sprintf("%.1f", r.Seconds), "", r.Note
		if r.SizeBytes > 0 {
			size = fmt.Sprintf("%.0f MB", float64(r.SizeBytes)/1e6)
			if r.SizeNote != "" {
				note = strings.TrimPrefix(note+"; ", "; ") + "size: " + r.SizeNote
			}
		}
		if r.Unavailable {
			secs = "unavailable"
			note = fmt.Sprintf("%s %s", r.SQLState, r.Error)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %d | %s | %s | %s |\n", r.System, r.Name, r.Params, r.Rows, secs, size, note)
	}

	fmt.Fprintln(w, "\n| system | search | filter | ef | clients | recall@10 | queries/s | p50 ms | p99 ms | plan |")
	fmt.Fprintln(w, "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
	for _, r := range rs {
		if r.Phase != "search" {
			continue
		}
		rec := ""
		if r.Recall != nil {
			rec = fmt.Sprintf("%.3f", *r.Recall)
		}
		ef := ""
		if r.EF > 0 {
			ef = fmt.Sprint(r.EF)
		}
		qps := fmt.Sprintf("%.0f", r.QPS)
		if r.QPS < 10 {
			qps = fmt.Sprintf("%.2f", r.QPS)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %d | %s | %s | %.2f | %.2f | %s |\n",
			r.System, r.Search, r.Filter, ef, r.Clients, rec, qps, r.P50ms, r.P99ms, planMethod(r.Plan))
	}
	return nil
}

// planMethod shortens an EXPLAIN to the access method it names.
func planMethod(plan string) string {
	if _, m, ok := strings.Cut(plan, "Method: "); ok {
		m, _, _ = strings.Cut(m, " /")
		return m
	}
	if _, m, ok := strings.Cut(plan, "Index Scan using "); ok {
		m, _, _ = strings.Cut(m, " ")
		return "index scan on " + m
	}
	if len(plan) > 60 {
		return plan[:60] + "…"
	}
	return plan
}

func reportFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return report(f, os.Stdout)
}
