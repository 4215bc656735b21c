// Keep what follows each of a batch of relations ([key, follows as JSON] rows).
UNWIND $rows AS row
MERGE (s:TogSchema {key: row[0]})
SET s.follows = row[1]
