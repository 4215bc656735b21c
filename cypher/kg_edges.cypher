// The KG's edges: every one starts at an Entity (tog's own relationships end
// at entities, never start there). Read from the count store, not the edges.
MATCH (:Entity)-[r]->() RETURN count(r) AS n
