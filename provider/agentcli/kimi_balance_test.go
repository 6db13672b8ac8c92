package agentcli

import (
	"testing"
	"time"

	"github.com/layoverhq/layover/provider"
)

// Kimi's balance texts (docs/agents.md).
const (
	kmBalance   = `Error code: 429 - {'error': {'message': 'Your account org-cn1x <ak-f3x1> is suspended due to insufficient balance, please recharge your account or check your plan and billing details', 'type': 'exceeded_current_quota_error'}}`
	kmBalanceCN = `Error code: 403 - {'error': {'message': '账户余额不足，请充值后重试', 'type': 'exceeded_current_quota_error'}}`
)

func TestClassifyKimiBalance(t *testing.T) {
	t.Parallel()
	runCases(t, []cliCase{
		{
			name:   "429 suspended due to insufficient balance: quota billing",
			exit:   75,
			stdout: "LLM provider error: " + kmBalance + "\n",
			want:   want{class: provider.ClassQuota, resource: "billing", retryAfter: -1, reason: `balance text "insufficient balance" (billing), reset unknown`},
		},
		{
			name:   "403 余额不足: quota billing",
			exit:   1,
			stdout: kmBalanceCN + "\n",
			want:   want{class: provider.ClassQuota, resource: "billing", retryAfter: -1, reason: "余额不足"},
		},
		{
			name:   "a balance text without a provider error",
			exit:   1,
			stderr: "Your account balance is insufficient. Please top up at platform.moonshot.ai.\n",
			want:   want{class: provider.ClassQuota, resource: "billing", retryAfter: -1, reason: "balance"},
		},
		{
			name:   "logged out: LLM not set",
			exit:   1,
			stdout: "LLM not set. Run `kimi login` to sign in, or set a model in your config file (~/.kimi/config.toml).\n",
			want:   want{class: provider.ClassAuth, retryAfter: -1, reason: `text "llm not set"`},
		},
		{
			name:   "expired session: 401 Authorization failed",
			exit:   1,
			stdout: kmAuth + "\n",
			want:   want{class: provider.ClassAuth, retryAfter: -1, reason: "Error code: 401"},
		},
	}, ClassifyKimi, ProviderKimi, time.UTC)
}
