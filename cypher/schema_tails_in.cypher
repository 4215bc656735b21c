// The nodes a relationship type leads to backwards (see schema_tails_out).
MATCH (n:Entity)-[:{{type}}]->(:Entity)
WITH n LIMIT $read
WITH DISTINCT n LIMIT $tails
RETURN n.id AS n
