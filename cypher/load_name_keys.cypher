// [key, entity] rows of the linking index, tagged with their source file:
// those not there yet are made (rows alike are one row). Looked up by
// entity, which has a few names, never by key: a name thousands of
// entities share would be read whole. (MERGE leaves that choice to the
// planner, which took the key while its statistics were of a few names:
// 10 rows read 4,000,160 entries of a name 200,000 entities share.)
UNWIND $rows AS row
OPTIONAL MATCH (n:TogName {entity: row[1]}) USING INDEX n:TogName(entity)
WHERE n.key = row[0]
WITH row, count(n) AS found WHERE found = 0
CREATE (:TogName {key: row[0], entity: row[1], source: $source})
