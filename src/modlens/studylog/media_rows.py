"""The media row functions, now `studylog.records.media` (kept so existing imports work)."""
from __future__ import annotations

from modlens.studylog.records.media import (ScoreRow, add_case_scores_many, add_comment_media,
                                            add_comment_media_score, add_comment_media_scores,
                                            add_comment_media_many, add_asr, add_fused_case, add_media, add_ocr,
                                            case_details, scored_case_parts)

__all__ = ["ScoreRow", "add_asr", "add_case_scores_many", "add_comment_media", "add_comment_media_many",
           "add_comment_media_score", "add_comment_media_scores", "add_fused_case", "add_media", "add_ocr",
           "case_details", "scored_case_parts"]
