// A setting changed only while it still holds what the caller read (JSON
// text); says whether it was.
MATCH (s:TogSetting {key: $key})
WHERE s.value = $was
SET s.value = $value
RETURN count(s) AS n
