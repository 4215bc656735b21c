// [entity, name, rank] rows: the best-ranked name (lower is better) wins.
UNWIND $rows AS row
MATCH (e:Entity {id: row[0]})
WITH e, row WHERE e.name_rank IS NULL OR row[2] < e.name_rank
SET e.name = row[1], e.name_rank = row[2]
