// A run's end: its status, answer and stats; the path nodes the answer cites
// and the paths they grew from take the Answer label (Browser highlights them).
// A planned run's lookahead ($simulated) becomes TogSimulated nodes, each a
// trajectory the Model foresaw from a real path node: drawn, never a KG fact
// (no AT link to the KG, not a TogPath).
MATCH (r:TogRun {id: $id})
SET r.status = $status, r.answer = $answer, r.stats = $stats, r.finished = $finished
WITH r
CALL (r) {
  UNWIND $cited AS cited
  MATCH (:TogPath {id: cited})-[:PARENT*0..]->(a:TogPath)
  SET a:Answer
}
CALL (r) {
  UNWIND $simulated AS row
  MATCH (p:TogPath {id: row.from})
  MERGE (s:TogSimulated {id: row.id})
  SET s.run = r.id, s.step = row.step, s.score = row.score, s.caption = row.caption, s.simulated = true
  MERGE (s)-[:LOOKAHEAD]->(p)
}
