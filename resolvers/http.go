package resolvers

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Bounds of POST /v1/beacons.
const (
	MaxReportBody = 4 << 20
	MaxReports    = 10000
)

// Handler is POST /v1/beacons: an edge's beacon fetches, a JSON array or
// NDJSON of Reports, with its feed source's token. auth names the source
// of a token.
func (m *Map) Handler(auth func(token string) (string, bool)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		source := ""
		if ok {
			source, ok = auth(tok)
		}
		switch {
		case !ok:
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "a feed source's bearer token is required"})
			return
		case r.Method != http.MethodPost:
			w.Header().Set("Allow", "POST")
			writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "POST only"})
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, MaxReportBody+1))
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		if len(body) > MaxReportBody {
			writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{"error": fmt.Sprintf("the body is over %d bytes", MaxReportBody)})
			return
		}
		reps, err := DecodeReports(body)
		if err != nil {
			code := http.StatusBadRequest
			if errors.Is(err, errTooMany) {
				code = http.StatusRequestEntityTooLarge
			}
			writeJSON(w, code, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, m.Report(r.Context(), source, reps))
	})
}

var errTooMany = fmt.Errorf("more than %d reports", MaxReports)

// DecodeReports reads a JSON array or NDJSON of reports.
func DecodeReports(body []byte) ([]Report, error) {
	var reps []Report
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	trimmed := strings.TrimSpace(string(body))
	if strings.HasPrefix(trimmed, "[") {
		if err := dec.Decode(&reps); err != nil {
			return nil, fmt.Errorf("reports: %v", err)
		}
		if len(reps) > MaxReports {
			return nil, errTooMany
		}
		return reps, nil
	}
	for i := 0; ; i++ {
		var r Report
		err := dec.Decode(&r)
		if err == io.EOF {
			return reps, nil
		}
		if err != nil {
			return nil, fmt.Errorf("report %d: %v", i, err)
		}
		if len(reps) == MaxReports {
			return nil, errTooMany
		}
		reps = append(reps, r)
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}
