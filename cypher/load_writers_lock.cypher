// The load writers' locks: a load's transaction that creates edges holds
// one (load_writer_check.cypher); what else writes edges takes them all
// first, so that it waits for those in flight and the ones after it see
// what it decided of the sole-writer mark.
UNWIND $keys AS key
MERGE (w:TogSetting {key: key}) SET w.value = 'null'
