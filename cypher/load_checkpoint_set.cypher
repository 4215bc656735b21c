// The load's checkpoint; the parts it sums up go.
MERGE (l:TogLoad {source: $source}) SET l += $values
WITH count(*) AS written
MATCH (p:TogLoadPart {source: $source})
DELETE p
