// Package robust holds the robustness suite: every way a hostile or careless
// client was found to crash, starve or exhaust the server, or to reach what
// its role was not granted, replayed against the real binary
// (internal/proctest) with bounded time and memory, so that none of them can
// come back unnoticed. Each file covers one class of probe.
package robust
