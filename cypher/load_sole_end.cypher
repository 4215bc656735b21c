// A load that was the only writer of the KG's edges completed, or starts
// over (--force): its mark goes, and the lines its chunks reached.
CALL () { MATCH (r:TogLoadReach {source: $source}) DELETE r }
OPTIONAL MATCH (s:TogSetting {key: $key})
WITH s WHERE s.value = $value
SET s.value = 'null'
