// Runs recorded before path nodes carried what Browser shows: their caption
// (the entity's name and the score to two places) and, on the PARENT edge,
// the step's relation by name (the IRI's last segment; runs recorded since
// carry the KG's own name). Runs are few and small: one pass.
MATCH (n:TogPath) WHERE n.caption IS NULL
OPTIONAL MATCH (n)-[e:PARENT]->(:TogPath)
WITH n, e, toString(round(n.score, 2)) AS s
WITH n, e, s + CASE WHEN s IS NULL THEN "" WHEN NOT s CONTAINS "." THEN ".00"
                    WHEN size(split(s, ".")[1]) = 1 THEN "0" ELSE "" END AS score
SET n.caption = CASE WHEN e IS NULL THEN n.name + " (topic)"
                     WHEN score IS NULL THEN n.name
                     ELSE n.name + " " + score END
WITH n, e WHERE e IS NOT NULL AND e.relation IS NULL AND n.relation IS NOT NULL
WITH n, e, reverse(split(reverse(n.relation), "/")[0]) AS tail
SET e.relation = replace(reverse(split(reverse(tail), ":")[0]), "_", " ")
                 + CASE WHEN n.direction = "in" THEN " (of)" ELSE "" END
