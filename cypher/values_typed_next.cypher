// A page of typed values (not strings, not tagged), in id order after $after:
// a database whose loads wrote them as the file did has them put in their
// stored form once (Neo4jSession._ensure_stored_values).
MATCH (v:Value)
WHERE v.id > $after AND v.lang IS NULL AND v.datatype IS NOT NULL AND v.datatype <> $string
WITH v ORDER BY v.id LIMIT $batch
RETURN v.id AS id
