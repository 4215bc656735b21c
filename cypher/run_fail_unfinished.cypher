// A run whose failure could not be written when it happened (the
// connection was gone): mark it failed unless it got further since.
MATCH (r:TogRun {id: $id})
WHERE r.status = 'running'
SET r.status = 'failed', r.finished = $finished, r.error = $error
RETURN count(r) AS marked
