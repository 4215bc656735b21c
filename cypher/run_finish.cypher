// A run's end: its status, answer and stats; the path nodes the answer cites
// and the paths they grew from take the Answer label (Browser highlights them).
MATCH (r:TogRun {id: $id})
SET r.status = $status, r.answer = $answer, r.stats = $stats, r.finished = $finished
WITH r
CALL (r) {
  UNWIND $cited AS cited
  MATCH (:TogPath {id: cited})-[:PARENT*0..]->(a:TogPath)
  SET a:Answer
}
