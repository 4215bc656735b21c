MATCH (p:TogPath {run: $id})
OPTIONAL MATCH (p)-[:PARENT]->(q:TogPath)
RETURN p {.*} AS path, q.path AS parent
