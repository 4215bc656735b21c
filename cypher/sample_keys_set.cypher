// Give a batch of nodes their sample keys ([element id, key] rows).
UNWIND $rows AS row
MATCH (n) WHERE elementId(n) = row[0]
SET n.sk = row[1]
