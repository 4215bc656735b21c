// Write (or update) a beam step's path nodes as the search goes: each is
// linked to its parent (or to the run as a root) and to the node it is at.
// `caption` (the entity's name and the score to two places) and the PARENT
// edge's `relation` (the KG's name of the step) are what Browser shows.
UNWIND $paths AS p
MERGE (n:TogPath {id: $run + "/" + p.id})
SET n.run = $run, n.path = p.id, n.depth = p.depth, n.entity = p.entity, n.name = p.name,
    n.relation = p.relation, n.direction = p.direction, n.via = p.via, n.score = p.score,
    n.kept = p.kept, n.literal = p.literal, n.caption = p.caption
WITH n, p
// labels for Browser's style sheet: green Kept, grey Pruned
CALL (n, p) { WITH n, p WHERE p.kept SET n:Kept REMOVE n:Pruned }
CALL (n, p) { WITH n, p WHERE NOT p.kept SET n:Pruned REMOVE n:Kept }
CALL (n, p) {
  WITH n, p WHERE p.parent IS NULL
  MATCH (r:TogRun {id: $run})
  MERGE (r)-[:ROOT]->(n)
}
CALL (n, p) {
  WITH n, p WHERE p.parent IS NOT NULL
  MATCH (q:TogPath {id: $run + "/" + p.parent})
  MERGE (n)-[e:PARENT]->(q)
  SET e.relation = p.step
}
CALL (n, p) {
  WITH n, p WHERE NOT p.literal
  MATCH (x:Entity {id: p.entity})
  MERGE (n)-[:AT]->(x)
}
CALL (n, p) {
  WITH n, p WHERE p.literal
  MATCH (x:Value {id: p.entity})
  MERGE (n)-[:AT]->(x)
}
