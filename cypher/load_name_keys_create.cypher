// [key, entity] rows of the linking index known to be new (a fresh load).
UNWIND $rows AS row
CREATE (:TogName {key: row[0], entity: row[1], source: $source})
