// Every source's checkpoint with the parts written since (a source whose
// first part has not been joined yet has parts only), by path.
CALL () { MATCH (l:TogLoad) RETURN l.source AS source UNION MATCH (p:TogLoadPart) RETURN p.source AS source }
OPTIONAL MATCH (l:TogLoad {source: source})
OPTIONAL MATCH (p:TogLoadPart {source: source})
WITH source, l, collect(properties(p)) AS parts
RETURN source, properties(l) AS checkpoint, parts ORDER BY coalesce(l.path, parts[0].path), source
