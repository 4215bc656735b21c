// The first $keep subjects of a crowded pair in the sample order (see sample_out).
MATCH (e:Entity {id: $e})<-[:{{type}}]-(x:Entity)
WITH x ORDER BY x.sk, x.id LIMIT $keep
{{then}}
