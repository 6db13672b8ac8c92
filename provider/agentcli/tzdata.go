package agentcli

// Claude Code prints resets with an IANA zone ("resets 4:50am
// (Europe/Rome)"). time.LoadLocation reads the system's zone database
// first; this embedded copy (about 450 KB) is its fallback, so that a
// minimal container without tzdata still reads those resets instead of
// calling them unknown.
import _ "time/tzdata"
