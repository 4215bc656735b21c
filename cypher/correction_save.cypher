// A correction's record, linked to the entities it changed and the run that prompted it
// (visible in Browser: MATCH (c:TogCorrection)-[:ABOUT]->(e) RETURN c, e).
MERGE (c:TogCorrection {id: $id})
SET c.created = $created, c.reason = $reason, c.run = $run, c.status = $status,
    c.reverted = $reverted, c.record = $record
WITH c
CALL (c) {
  UNWIND $subjects AS subject
  MATCH (e:Entity {id: subject})
  MERGE (c)-[:ABOUT]->(e)
}
CALL (c) {
  OPTIONAL MATCH (r:TogRun {id: $run})
  FOREACH (_ IN CASE WHEN r IS NULL THEN [] ELSE [1] END | MERGE (c)-[:PROMPTED_BY]->(r))
}
