// [entity, name or null, rank, sample key] rows: one Entity node each (the
// sample key, the SHA-1 of its IRI, orders the samples of crowded pairs); a row's name
// replaces the node's when it ranks better (lower is better; of equal ranks, the lower text).  The rank is
// read after taking the node's write lock (the SET/REMOVE pair), as another
// chunk's transaction may be naming the same entity.
// Returns [row index, node id] pairs: the edge statements of the same
// transaction find their ends by these ids instead of the index.
UNWIND range(0, size($rows) - 1) AS i
WITH i, $rows[i] AS row
MERGE (e:Entity {id: row[0]})
  ON CREATE SET e.sk = row[3]
WITH i, row, e
CALL (e, row) {
  WITH e, row WHERE row[1] IS NOT NULL
  SET e.tog_lock = true REMOVE e.tog_lock
  WITH e, row WHERE e.name_rank IS NULL OR row[2] < e.name_rank OR (row[2] = e.name_rank AND row[1] < e.name)
  SET e.name = row[1], e.name_rank = row[2]
}
RETURN collect([i, id(e)]) AS ids
