package store

// agentRunNodeMigration is schema version 10: the node that runs each
// agent run (AgentRunRecord.Node), so that in a cluster sharing one
// Postgres a node's start settles only its own unfinished runs, not
// those other nodes are running, and a run whose node died is settled by
// whichever node finds it. Rows written before it have no node ("").
var agentRunNodeMigration = migration{
	version: 10,
	name:    "agent runs name their node",
	statements: []string{
		`ALTER TABLE agent_runs ADD COLUMN node TEXT NOT NULL DEFAULT ''`,
	},
}
