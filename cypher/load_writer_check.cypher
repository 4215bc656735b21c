// A load transaction that creates edges: it holds a writer's lock until it
// commits (load_writers_lock.cypher), and reads the sole-writer mark, which
// must still be its load's.
MERGE (w:TogSetting {key: $slot}) SET w.value = 'null'
WITH w
OPTIONAL MATCH (s:TogSetting {key: $key})
RETURN s.value AS value
