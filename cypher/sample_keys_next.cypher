// A batch of KG nodes without a sample key.
MATCH (n) WHERE (n:Entity OR n:Value) AND n.sk IS NULL
WITH n LIMIT $batch
RETURN elementId(n) AS node, n.id AS id
