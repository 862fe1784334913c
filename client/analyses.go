package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/url"
	"strconv"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// CreateAnalysis creates a data analysis (POST /v1/analyses) from req:
// its datasets given whole, or named among the files of one of the
// caller's sessions. It returns once the datasets are loaded and
// profiled, with the profile (Profile as JSON, ProfileText as text). A
// dataset that cannot be read is no error: its table in the profile says
// why. Bad datasets are a 400 naming the field; a caller with all its
// sessions open gets 429 (IsTooManyRequests).
func (c *Client) CreateAnalysis(ctx context.Context, req api.AnalysisRequest) (*api.Analysis, error) {
	var a api.Analysis
	if err := c.call(ctx, request{method: "POST", path: "/v1/analyses"}, req, &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// Upload is a dataset to upload: its file name and its content, read
// once as the request is sent.
type Upload struct {
	// Name is the file's name, such as "sales.csv".
	Name string
	// Content is read to its end.
	Content io.Reader
}

// UploadAnalysis creates a data analysis as CreateAnalysis does, from a
// multipart/form-data upload of files, streamed from their readers as
// the request is sent (nothing is held in memory); image and limits are
// optional ("" and zero: the server's defaults).
func (c *Client) UploadAnalysis(ctx context.Context, files []Upload, image string, limits sandbox.Limits) (*api.Analysis, error) {
	var limitsJSON []byte
	if limits != (sandbox.Limits{}) {
		b, err := json.Marshal(limits)
		if err != nil {
			return nil, fmt.Errorf("client: encode limits: %w", err)
		}
		limitsJSON = b
	}
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() { pw.CloseWithError(writeForm(mw, files, image, limitsJSON)) }()
	defer pr.Close() // ends the writer if the request ends early
	resp, err := c.send(ctx, request{method: "POST", path: "/v1/analyses", body: pr, contentType: mw.FormDataContentType()})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var a api.Analysis
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		return nil, fmt.Errorf("client: POST /v1/analyses: decode answer: %w", err)
	}
	return &a, nil
}

// writeForm writes the parts of an upload to mw and closes it.
func writeForm(mw *multipart.Writer, files []Upload, image string, limits []byte) error {
	if image != "" {
		if err := mw.WriteField("image", image); err != nil {
			return err
		}
	}
	if limits != nil {
		if err := mw.WriteField("limits", string(limits)); err != nil {
			return err
		}
	}
	for _, f := range files {
		w, err := mw.CreateFormFile("datasets", f.Name)
		if err != nil {
			return err
		}
		if _, err := io.Copy(w, f.Content); err != nil {
			return fmt.Errorf("client: read %s: %w", f.Name, err)
		}
	}
	return mw.Close()
}

// GetAnalysis returns analysis id (GET /v1/analyses/{id}): its profile
// and its conversation so far. IsNotFound reports an unknown analysis
// (or another tenant's); one that ended (deleted, its session closed or
// expired) is an *APIError of status 410.
func (c *Client) GetAnalysis(ctx context.Context, id string) (*api.Analysis, error) {
	var a api.Analysis
	if err := c.call(ctx, request{method: "GET", path: analysisPath(id)}, nil, &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// ListAnalyses returns the caller's analyses, newest first, without their
// profiles (GET /v1/analyses, every page).
func (c *Client) ListAnalyses(ctx context.Context) ([]api.Analysis, error) {
	var all []api.Analysis
	cursor := ""
	for {
		var list api.AnalysisList
		req := request{method: "GET", path: "/v1/analyses"}
		if cursor != "" {
			req.query = url.Values{"cursor": {cursor}}
		}
		if err := c.call(ctx, req, nil, &list); err != nil {
			return nil, err
		}
		all = append(all, list.Analyses...)
		if list.Next == "" {
			return all, nil
		}
		cursor = list.Next
	}
}

// DeleteAnalysis ends analysis id (DELETE /v1/analyses/{id}): a question
// being answered is cancelled, and its session closed.
func (c *Client) DeleteAnalysis(ctx context.Context, id string) error {
	return c.call(ctx, request{method: "DELETE", path: analysisPath(id)}, nil, nil)
}

// Ask asks question req about analysis id (POST
// /v1/analyses/{id}/questions), follows its progress to the end, passing
// each event to fn (which may be nil) as FollowQuestion does, and returns
// the question with its answer. The model is the server's: a server
// without one answers 501 (code "not_configured"); a question while
// another of the analysis is answered is a 409 (code "conflict").
func (c *Client) Ask(ctx context.Context, id string, req api.QuestionRequest, fn func(AgentEvent)) (*api.AnalysisQuestion, error) {
	var q api.AnalysisQuestion
	if err := c.call(ctx, request{method: "POST", path: analysisPath(id) + "/questions"}, req, &q); err != nil {
		return nil, err
	}
	if q.N < 1 {
		return nil, fmt.Errorf("client: POST %s/questions: the answer has no question number", analysisPath(id))
	}
	return c.FollowQuestion(ctx, id, q.N, fn)
}

// FollowQuestion follows question n of analysis id (GET
// /v1/analyses/{id}/questions/{n}/events) until it ends, passing each
// event to fn (which may be nil) as FollowAgentRun does, an answer event
// included (Question), and returns the question as it ended, with its
// answer; a dropped connection is resumed.
func (c *Client) FollowQuestion(ctx context.Context, id string, n int, fn func(AgentEvent)) (*api.AnalysisQuestion, error) {
	var answer *api.AnalysisQuestion
	if _, err := c.followAgentEvents(ctx, questionPath(id, n)+"/events", func(e AgentEvent) {
		if e.Question != nil {
			answer = e.Question
		}
		if fn != nil {
			fn(e)
		}
	}); err != nil {
		return nil, err
	}
	if answer != nil {
		return answer, nil
	}
	return c.GetQuestion(ctx, id, n) // resumed after the answer event
}

// GetQuestion returns question n of analysis id (GET
// /v1/analyses/{id}/questions/{n}) with its answer and, once it ended,
// its run's trace.
func (c *Client) GetQuestion(ctx context.Context, id string, n int) (*api.AnalysisQuestion, error) {
	var q api.AnalysisQuestion
	if err := c.call(ctx, request{method: "GET", path: questionPath(id, n)}, nil, &q); err != nil {
		return nil, err
	}
	return &q, nil
}

// Conversation returns the questions of analysis id so far, oldest
// first, with their answers as data (GET /v1/analyses/{id}/questions).
func (c *Client) Conversation(ctx context.Context, id string) ([]api.AnalysisQuestion, error) {
	var list api.AnalysisQuestionList
	if err := c.call(ctx, request{method: "GET", path: analysisPath(id) + "/questions"}, nil, &list); err != nil {
		return nil, err
	}
	return list.Questions, nil
}

// ApproveQuestion decides approval approvalID of question n of analysis
// id (POST /v1/analyses/{id}/questions/{n}/approvals/{approval_id}), as
// Approve does for an agent run.
func (c *Client) ApproveQuestion(ctx context.Context, id string, n int, approvalID string, approve bool, reason string) (*api.AgentDecision, error) {
	var d api.AgentDecision
	body := api.ApprovalRequest{Approve: &approve, Reason: reason}
	if err := c.call(ctx, request{method: "POST", path: questionPath(id, n) + "/approvals/" + url.PathEscape(approvalID)}, body, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// AnalysisFile downloads a chart or a file of an answer of analysis id
// (GET /v1/analyses/{id}/files/{name}) by its name in the answer: of
// question n, or with n 0 of the latest answer that has one so called.
// A file that holds a secret and is not text is an *APIError of status
// 403 (code "withheld").
func (c *Client) AnalysisFile(ctx context.Context, id, name string, n int) ([]byte, error) {
	r := request{method: "GET", path: analysisPath(id) + "/files/" + escapePath(name)}
	if n != 0 {
		r.query = url.Values{"question": {strconv.Itoa(n)}}
	}
	resp, err := c.send(ctx, r)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("client: GET file %s of analysis %s: %w", name, id, err)
	}
	return b, nil
}

// analysisPath is the URL path of analysis id.
func analysisPath(id string) string { return "/v1/analyses/" + url.PathEscape(id) }

// questionPath is the URL path of question n of analysis id.
func questionPath(id string, n int) string { return analysisPath(id) + "/questions/" + strconv.Itoa(n) }
