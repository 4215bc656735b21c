// A typed value whose stored form is a node already ([old id, new id] rows):
// its edges move to that node (with their correction marks), and it goes.
// Returns the entities whose edges moved (two of them may have become one).
UNWIND $rows AS row
MATCH (v:Value {id: row[0]}), (c:Value {id: row[1]})
CALL (v, c) {
  MATCH (s)-[r]->(v)
  MERGE (s)-[m:$(type(r))]->(c)
  SET m += properties(r)
  RETURN collect(DISTINCT s.id) AS subjects
}
DETACH DELETE v
RETURN subjects
