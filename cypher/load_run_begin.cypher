// A load's entry among the loads running (Neo4jSink._decide_writes). The
// load keeps it write-locked from a transaction it holds open until its end
// (load_run_hold.cypher): the lock of a load killed outright is free.
CREATE (r:TogLoadRun)
SET r.token = $token, r.source = $source
