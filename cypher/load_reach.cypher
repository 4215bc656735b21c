// How far a load's chunk reaches (its last line), written with the chunk's
// first transaction to commit: a re-run of a load that was the only writer
// of the KG's edges merges the lines up to the furthest, and creates after.
CREATE (r:TogLoadReach)
SET r.source = $source, r.lines = $lines
