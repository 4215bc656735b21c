// A load that created edges found another load's sole-writer mark: that load
// took it for killed. Under every writer's lock (none of either load's
// creating transactions in flight), the mark goes, and both merge.
UNWIND $keys AS key
MERGE (w:TogSetting {key: key}) SET w.value = 'null'
WITH count(*) AS locked
MATCH (s:TogSetting {key: $key})
SET s.value = 'null'
