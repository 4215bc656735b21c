// A load that creates its edges (the KG had none) is their only writer
// until another load or a correction writes edges too, or it completes.
CALL () { MATCH (r:TogLoadReach) DELETE r }
MERGE (s:TogSetting {key: $key}) SET s.value = $value
