"""Response body of ``GET /v1/usage/models``: a tenant's model calls by UTC day and model."""

from __future__ import annotations

from datetime import date

from pydantic import BaseModel, ConfigDict, Field


class ModelUsageDay(BaseModel):
    day: date = Field(description="the UTC day")
    model: str
    calls: int = Field(description="calls made or refused, whatever their outcome")
    errors: int = Field(description="calls that failed")
    refused: int = Field(description="calls not made because the model's circuit was open")
    input_tokens: int = Field(description="tokens in, as the provider reported them")
    output_tokens: int = Field(description="tokens out, as the provider reported them")
    mean_latency_ms: int


class ModelUsageTotals(BaseModel):
    calls: int
    errors: int
    refused: int
    input_tokens: int
    output_tokens: int


class ModelUsageReport(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    from_: date = Field(alias="from", description="the first UTC day counted")
    to: date = Field(description="the last UTC day counted")
    items: list[ModelUsageDay] = Field(description="one per day and model with calls, by day")
    totals: ModelUsageTotals
