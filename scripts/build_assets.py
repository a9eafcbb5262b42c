"""Build the bundled enterprise tool catalogue and persona bank under `data_gen/assets/`.

Everything here is hand-written domain content: parameter specs, tool families of near-duplicates,
singleton tools, and the ingredients of the persona bank. The script composes them, validates every
record through the pydantic models of `data_gen.schema`, writes

    data_gen/assets/catalogue.json           all tools
    data_gen/assets/catalogue_train.json     tools of the training lines of business
    data_gen/assets/catalogue_heldout.json   tools of the held-out lines of business
    data_gen/assets/personas.jsonl           one persona per line

and prints summary counts. It is deterministic (fixed seed, standard library only), so running it
twice gives byte-identical files:

    python scripts/build_assets.py

The embedding-based near-duplicate share is measured separately by
`scripts/check_near_duplicates.py` (it needs the sentence encoder).
"""

from __future__ import annotations

import json
import random
import re
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from data_gen.schema import Persona, Tool  # noqa: E402

SEED = 7305
ASSETS = ROOT / "data_gen" / "assets"

FIN = "finance"
PROC = "procurement"
HR = "human resources"
SALES = "sales"
SCM = "supply chain"
CS = "customer service"
ITSM = "IT service management"
MFG = "manufacturing"
FAC = "facilities and real estate"
MKT = "marketing"
TE = "travel and expense"
LEGAL = "legal and compliance"

LINES_OF_BUSINESS = (FIN, PROC, HR, SALES, SCM, CS, ITSM, MFG, FAC, MKT, TE, LEGAL)
# Whole lines of business kept out of training, so evaluation sees tools the model never saw.
HELDOUT_LOBS = (TE, LEGAL)

# Short prefixes for family ids, e.g. "fin.journal_post".
LOB_PREFIX = {
    FIN: "fin",
    PROC: "proc",
    HR: "hr",
    SALES: "sales",
    SCM: "scm",
    CS: "cs",
    ITSM: "itsm",
    MFG: "mfg",
    FAC: "fac",
    MKT: "mkt",
    TE: "te",
    LEGAL: "legal",
}

CURRENCIES = ["USD", "EUR", "GBP", "JPY", "CHF", "CAD", "AUD", "INR", "CNY", "BRL", "MXN", "SGD", "SEK"]

# --------------------------------------------------------------------------------------------
# Parameter spec helpers
# --------------------------------------------------------------------------------------------


def ident(pattern: str, description: str) -> dict[str, Any]:
    """An identifier or code: a string that must match `pattern`."""
    return {"type": "string", "pattern": pattern, "description": description}


def text(description: str, max_length: int = 500, min_length: int = 1) -> dict[str, Any]:
    """Free text, bounded in length."""
    return {"type": "string", "minLength": min_length, "maxLength": max_length, "description": description}


def choice(values: list[str], description: str) -> dict[str, Any]:
    return {"type": "string", "enum": list(values), "description": description}


def day(description: str) -> dict[str, Any]:
    return {"type": "string", "format": "date", "description": description}


def moment(description: str) -> dict[str, Any]:
    return {"type": "string", "format": "date-time", "description": description}


def email(description: str) -> dict[str, Any]:
    return {"type": "string", "format": "email", "description": description}


def url(description: str) -> dict[str, Any]:
    return {"type": "string", "format": "uri", "pattern": "^https://", "description": description}


def money(description: str, low: float = 0.01, high: float = 10_000_000) -> dict[str, Any]:
    return {"type": "number", "minimum": low, "maximum": high, "description": description}


def number(description: str, low: float, high: float) -> dict[str, Any]:
    return {"type": "number", "minimum": low, "maximum": high, "description": description}


def count(description: str, low: int, high: int) -> dict[str, Any]:
    return {"type": "integer", "minimum": low, "maximum": high, "description": description}


def flag(description: str, default: bool | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"type": "boolean", "description": description}
    if default is not None:
        spec["default"] = default
    return spec


def listof(item: dict[str, Any], description: str, low: int = 1, high: int = 20) -> dict[str, Any]:
    item = {k: v for k, v in item.items() if k != "description"}
    return {"type": "array", "items": item, "minItems": low, "maxItems": high, "description": description}


def record(properties: dict[str, dict[str, Any]], required: list[str], description: str) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "description": description}


# --------------------------------------------------------------------------------------------
# Shared identifier patterns and value lists
# --------------------------------------------------------------------------------------------

EMP = "^EMP[0-9]{6}$"
VENDOR = "^V[0-9]{7}$"
CUSTOMER = "^C[0-9]{8}$"
COST_CENTER = "^CC-[0-9]{4}$"
MATERIAL = "^MAT-[0-9]{6}$"
PLANT = "^[A-Z]{2}[0-9]{2}$"
WAREHOUSE = "^WH-[A-Z]{3}-[0-9]{2}$"
COUNTRY = "^[A-Z]{2}$"
PERIOD = "^20[0-9]{2}-(0[1-9]|1[0-2])$"
PHONE = "^\\+[1-9][0-9]{7,14}$"
INCIDENT = "^INC[0-9]{7}$"
CASE = "^CS-[0-9]{8}$"
CONTRACT = "^CTR-[0-9]{6}$"
BUILDING = "^BLD-[A-Z]{3}-[0-9]{2}$"

UNITS = ["EA", "KG", "L", "M", "BOX", "PAL", "H"]
DEPARTMENTS = [
    "finance",
    "procurement",
    "human_resources",
    "sales",
    "marketing",
    "operations",
    "it",
    "legal",
    "facilities",
    "customer_service",
    "research_and_development",
]

_LINE_ITEM = record(
    {
        "material_id": ident(MATERIAL, "Material number of the item."),
        "quantity": number("Quantity in the material's base unit.", 0.001, 1_000_000),
    },
    ["material_id", "quantity"],
    "One ordered item.",
)

# --------------------------------------------------------------------------------------------
# Parameter library: every property a tool can declare, keyed by its name. A tool can override
# any field of a spec (most often the description) where its meaning is narrower.
# --------------------------------------------------------------------------------------------

P: dict[str, dict[str, Any]] = {
    # --- finance -------------------------------------------------------------------------------
    "company_code": ident("^[0-9]{4}$", "Four-digit company code of the legal entity, e.g. 1000."),
    "posting_date": day("Posting date of the document; it must fall in an open posting period."),
    "fiscal_period": ident(PERIOD, "Fiscal period as YYYY-MM, e.g. 2025-03."),
    "fiscal_year": count("Fiscal year, e.g. 2025.", 2015, 2035),
    "fiscal_quarter": ident("^20[0-9]{2}-Q[1-4]$", "Fiscal quarter as YYYY-Qn, e.g. 2025-Q2."),
    "cost_center": ident(COST_CENTER, "Cost center to charge, e.g. CC-4100."),
    "gl_account": ident("^[0-9]{6}$", "Six-digit general ledger account, e.g. 400100."),
    "currency": choice(CURRENCIES, "ISO 4217 currency code of the amount."),
    "amount": money("Amount in the document currency."),
    "country_code": ident(COUNTRY, "ISO 3166-1 alpha-2 country code, e.g. DE or BR."),
    "journal_lines": listof(
        record(
            {
                "gl_account": ident("^[0-9]{6}$", "Six-digit general ledger account."),
                "side": choice(["debit", "credit"], "Whether the line debits or credits the account."),
                "amount": money("Line amount in the document currency."),
                "cost_center": ident(COST_CENTER, "Optional cost center for expense accounts."),
            },
            ["gl_account", "side", "amount"],
            "One journal line.",
        ),
        "Journal lines; debits and credits must balance.",
        low=2,
        high=50,
    ),
    "header_text": text("Short header text shown in the document journal.", 50),
    "invoice_id": ident("^VI-[0-9]{8}$", "Supplier invoice document number, e.g. VI-20250417."),
    "vendor_id": ident(VENDOR, "Supplier (vendor) account number, e.g. V0012345."),
    "vendor_ids": listof(ident(VENDOR, ""), "Supplier account numbers to restrict the run to.", 1, 200),
    "customer_id": ident(CUSTOMER, "Customer account number, e.g. C00481516."),
    "run_date": day("Date on which the payment run executes."),
    "dry_run": flag("If true, only the payment proposal is produced; nothing is paid.", False),
    "payment_currency": choice(CURRENCIES, "Currency in which the suppliers are paid."),
    "from_currency": choice(CURRENCIES, "Source currency (ISO 4217)."),
    "to_currency": choice(CURRENCIES, "Target currency (ISO 4217)."),
    "rate_date": day("Date the rate applies to; defaults to today."),
    "payment_block_reason": choice(
        ["invoice_dispute", "missing_documents", "quality_issue", "fraud_review", "sanctions_check"],
        "Why payments to the supplier are stopped.",
    ),
    "due_before": day("Only items due on or before this date."),
    "min_amount": money("Only items at or above this amount."),
    "recurrence": choice(["monthly", "quarterly", "yearly"], "How often the accrual is re-posted."),
    "last_posting_date": day("Date of the last automatic posting."),
    "dunning_hold_until": day("Date on which dunning resumes automatically."),
    "dunning_hold_reason": choice(
        ["payment_plan_agreed", "invoice_disputed", "customer_in_insolvency", "key_account_request"],
        "Reason recorded for stopping reminders.",
    ),
    "bank_account_id": ident("^BA-[0-9]{6}$", "House bank account id, e.g. BA-100200."),
    "statement_date": day("Date of the bank statement to reconcile."),
    "from_cost_center": ident(COST_CENTER, "Cost center that gives up budget."),
    "to_cost_center": ident(COST_CENTER, "Cost center that receives the budget."),
    "justification": text("Business justification, in one or two sentences.", 1000),
    "file_format": choice(["xlsx", "csv", "pdf"], "Format of the exported file."),
    "fixed_asset_id": ident("^FA-[0-9]{8}$", "Fixed asset number, e.g. FA-00031877."),
    "depreciation_area": choice(["book", "tax", "group_ifrs"], "Valuation view of the schedule."),
    "journal_entry_id": ident("^JE-[0-9]{10}$", "Journal entry document number."),
    "reversal_date": day("Posting date of the reversal document."),
    "reversal_reason": choice(
        ["wrong_posting_date", "wrong_amount", "wrong_account", "duplicate_posting", "other"],
        "Reason code stored on the reversal.",
    ),
    "days_overdue_min": count("Only invoices at least this many days past due.", 1, 365),
    "new_owner_id": ident(EMP, "Employee id of the new owner."),
    "account_name": text("Name of the new account as it should appear in the chart of accounts.", 50),
    "account_type": choice(
        ["balance_sheet", "profit_and_loss"], "Whether it is a balance sheet or P&L account."
    ),
    # --- procurement ---------------------------------------------------------------------------
    "material_id": ident(MATERIAL, "Material number, e.g. MAT-004711."),
    "quantity": number("Quantity in the material's base unit.", 0.001, 1_000_000),
    "unit_of_measure": choice(UNITS, "Unit of measure of the quantity."),
    "delivery_date": day("Date by which the goods or service are needed."),
    "service_description": text("What the supplier is to do, in plain words.", 1000),
    "service_end_date": day("Last day the service is performed."),
    "catalog_item_id": ident("^CAT-[0-9]{7}$", "Item number in the procurement catalog."),
    "purchase_order_id": ident("^PO-[0-9]{8}$", "Purchase order number, e.g. PO-45001234."),
    "requisition_id": ident("^PR-[0-9]{8}$", "Purchase requisition number, e.g. PR-10004567."),
    "item_number": {
        "type": "integer",
        "minimum": 10,
        "maximum": 9990,
        "multipleOf": 10,
        "description": "Line item number on the document (10, 20, 30, ...).",
    },
    "received_quantity": number("Quantity actually received at the dock.", 0.001, 1_000_000),
    "return_reason": choice(
        ["damaged", "wrong_item", "quality_defect", "over_delivery", "late_delivery"],
        "Why the goods go back to the supplier.",
    ),
    "supplier_name": text("Legal name of the supplier.", 120),
    "tax_id": ident("^[A-Z0-9]{8,15}$", "Supplier tax registration number (VAT, EIN, GSTIN)."),
    "contact_email": email("Email address of the main contact."),
    "rfq_title": text("Title of the request for quotation shown to bidders.", 120),
    "bid_deadline": moment("When bidding closes (ISO 8601 with time zone)."),
    "auction_start": moment("When the live auction opens."),
    "outline_agreement_id": ident("^OA-[0-9]{8}$", "Contract or scheduling agreement number."),
    "po_cancellation_reason": choice(
        ["no_longer_needed", "duplicate_order", "supplier_cannot_deliver", "price_change", "other"],
        "Reason code for the cancellation.",
    ),
    "new_delivery_date": day("The new delivery date to record."),
    "purchasing_category": choice(
        [
            "it_hardware",
            "software",
            "professional_services",
            "facilities",
            "raw_materials",
            "logistics",
            "marketing_services",
            "office_supplies",
        ],
        "Spend category.",
    ),
    "iban": ident("^[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}$", "IBAN of the supplier's account."),
    "swift_bic": ident("^[A-Z]{6}[A-Z0-9]{2}([A-Z0-9]{3})?$", "SWIFT/BIC of the supplier's bank."),
    "effective_date": day("Date from which the change applies."),
    "material_description": text("Short description of the new material.", 40),
    "material_group": choice(
        ["MG-ELEC", "MG-MECH", "MG-CHEM", "MG-PACK", "MG-OFFICE", "MG-MRO"], "Material group."
    ),
    "new_unit_price": money("Announced new price per base unit."),
    "max_amount": money("Only documents at or below this net value."),
    "days_ahead": count("Look-ahead window in days.", 1, 365),
    "approver_comment": text("Comment stored with the approval.", 500),
    # --- human resources -----------------------------------------------------------------------
    "employee_id": ident(EMP, "Employee id, e.g. EMP004217."),
    "employee_ids": listof(ident(EMP, ""), "Employee ids.", 1, 100),
    "training_request_id": ident("^TR-[0-9]{5}$", "Training request number, e.g. TR-20931."),
    "start_date": day("First day."),
    "end_date": day("Last day (inclusive)."),
    "half_day": flag("Whether the first or last day is only a half day.", False),
    "sick_note_attached": flag("Whether a medical certificate was uploaded.", False),
    "expected_birth_date": day("Expected or actual date of birth or adoption."),
    "street": text("Street and house number.", 120),
    "city": text("City or town.", 80),
    "postal_code": ident("^[A-Za-z0-9 -]{3,10}$", "Postal or ZIP code."),
    "position_title": text("Job title of the position.", 100),
    "hiring_manager_id": ident(EMP, "Employee id of the hiring manager."),
    "replaced_employee_id": ident(EMP, "Employee id of the person who left."),
    "job_grade": choice(["G04", "G05", "G06", "G07", "G08", "G09", "G10", "G11", "G12"], "Job grade."),
    "target_cost_center": ident(COST_CENTER, "Cost center the employee moves to."),
    "pay_period": ident(PERIOD, "Payroll period as YYYY-MM."),
    "candidate_id": ident("^CAN-[0-9]{7}$", "Candidate id from the applicant tracking system."),
    "manager_id": ident(EMP, "Employee id of the line manager."),
    "contract_end_date": day("End date of the fixed-term contract."),
    "review_cycle": ident("^20[0-9]{2}-(H1|H2|FY)$", "Review cycle, e.g. 2025-H1 or 2025-FY."),
    "performance_rating": choice(
        ["exceeds", "meets", "partially_meets", "does_not_meet"], "Overall performance rating."
    ),
    "summary": text("Summary text.", 2000),
    "interviewer_ids": listof(ident(EMP, ""), "Employee ids of the interview panel.", 1, 6),
    "interview_start": moment("Start of the interview (ISO 8601 with time zone)."),
    "last_working_day": day("Last day of employment."),
    "termination_reason": choice(
        ["resignation", "retirement", "redundancy", "end_of_contract", "dismissal", "mutual_agreement"],
        "Reason for leaving.",
    ),
    "depth": count("How many levels below the start node to include.", 1, 6),
    "benefit_plan_code": ident("^BEN-[A-Z]{3}[0-9]{2}$", "Benefit plan code, e.g. BEN-MED02."),
    "coverage_level": choice(
        ["employee_only", "employee_spouse", "employee_children", "family"], "Who is covered."
    ),
    "contact_name": text("Full name of the contact person.", 120),
    "phone_number": ident(PHONE, "Phone number in E.164 format, e.g. +4915112345678."),
    "relationship": choice(
        ["spouse", "partner", "parent", "child", "sibling", "friend", "other"], "Relation."
    ),
    "new_annual_salary": money("New gross annual base salary.", 1000, 5_000_000),
    "department": choice(DEPARTMENTS, "Department."),
    "letter_purpose": choice(
        ["visa_application", "mortgage", "apartment_rental", "bank_account", "other"],
        "What the letter will be used for.",
    ),
    "course_id": ident("^CRS-[0-9]{5}$", "Learning course id, e.g. CRS-01234."),
    "due_date": day("Date by which it must be done."),
    "award_category": choice(
        ["customer_focus", "innovation", "teamwork", "safety", "long_service"], "Award category."
    ),
    "week_start_date": day("Monday of the week being reported."),
    # --- sales ---------------------------------------------------------------------------------
    "line_items": listof(_LINE_ITEM, "Items with quantities.", 1, 100),
    "valid_until": day("Last day the offer can be accepted."),
    "discount_percent": number("Discount off list price, in percent.", 0.5, 60),
    "contract_id": ident(CONTRACT, "Contract number, e.g. CTR-004512."),
    "quote_id": ident("^QT-[0-9]{7}$", "Sales quote number, e.g. QT-2003417."),
    "requested_delivery_date": day("Delivery date the customer asked for."),
    "sales_region": choice(
        ["NA_EAST", "NA_WEST", "LATAM", "EMEA_NORTH", "EMEA_SOUTH", "DACH", "APJ", "ANZ"], "Sales region."
    ),
    "opportunity_id": ident("^OPP-[0-9]{7}$", "Opportunity id in the CRM, e.g. OPP-0098812."),
    "opportunity_stage": choice(
        ["qualification", "discovery", "proposal", "negotiation", "closed_won", "closed_lost"],
        "Pipeline stage to move the opportunity to.",
    ),
    "new_close_date": day("New expected close date."),
    "company_name": text("Name of the prospect's company.", 120),
    "partner_id": ident("^PTN-[0-9]{5}$", "Referring partner id, e.g. PTN-00412."),
    "event_code": ident("^EVT-[0-9]{4}-[A-Z]{3}$", "Event code, e.g. EVT-2025-HAM."),
    "lead_id": ident("^LD-[0-9]{7}$", "Lead id, e.g. LD-0421337."),
    "estimated_value": money("Estimated deal value."),
    "expected_close_date": day("Expected close date."),
    "activity_type": choice(["call", "meeting", "email", "demo", "site_visit"], "Kind of activity."),
    "activity_date": day("When the activity took place."),
    "notes": text("Free-text notes.", 2000),
    "days_without_activity": count("Minimum number of days since the last logged activity.", 7, 365),
    "committed_amount": money("Amount the rep commits to close in the quarter."),
    "best_case_amount": money("Best-case amount for the quarter."),
    "sales_order_id": ident("^SO-[0-9]{8}$", "Sales order number, e.g. SO-30001234."),
    "order_hold_reason": text("Why the order is held.", 300),
    "competitor_name": text("Name of the competitor.", 80),
    "rebate_percent": number("Rebate rate in percent of qualifying revenue.", 0.1, 25),
    "valid_from": day("First day the agreement applies."),
    "valid_to": day("Last day the agreement applies."),
    "growth_target_percent": number("Year-over-year growth that unlocks the rebate, in percent.", 1, 100),
    "limit": count("Maximum number of rows to return.", 1, 100),
    "sales_cancellation_reason": choice(
        ["customer_request", "credit_block", "pricing_error", "out_of_stock", "duplicate"],
        "Reason code for the cancellation.",
    ),
    # --- supply chain --------------------------------------------------------------------------
    "tracking_number": ident("^[A-Z0-9]{10,22}$", "Carrier tracking number of the parcel."),
    "container_number": ident("^[A-Z]{4}[0-9]{7}$", "ISO 6346 container number, e.g. MSCU1234567."),
    "air_waybill": ident("^[0-9]{3}-[0-9]{8}$", "Air waybill number, e.g. 020-12345675."),
    "plant_id": ident(PLANT, "Plant code, e.g. DE01."),
    "source_plant_id": ident(PLANT, "Plant that issues the stock."),
    "receiving_plant_id": ident(PLANT, "Plant that receives the stock."),
    "receiving_company_code": ident("^[0-9]{4}$", "Company code of the receiving legal entity."),
    "from_storage_location": ident("^[0-9]{4}$", "Storage location that issues the stock, e.g. 0001."),
    "to_storage_location": ident("^[0-9]{4}$", "Storage location that receives the stock."),
    "warehouse_id": ident(WAREHOUSE, "Warehouse id, e.g. WH-HAM-01."),
    "new_quantity": number("New quantity in the material's base unit.", 0, 1_000_000),
    "origin_postal_code": ident("^[A-Za-z0-9 -]{3,10}$", "Postal code where the goods are picked up."),
    "destination_postal_code": ident("^[A-Za-z0-9 -]{3,10}$", "Postal code of the delivery address."),
    "pickup_date": day("Requested pickup date."),
    "weight_kg": number("Gross weight in kilograms.", 0.1, 40_000),
    "pallet_count": count("Number of pallets.", 1, 33),
    "parcel_count": count("Number of parcels.", 1, 200),
    "horizon_weeks": count("Forecast horizon in weeks.", 1, 52),
    "requested_date": day("Date the customer wants the goods."),
    "storage_bin_ids": listof(
        ident("^[0-9]{2}-[0-9]{2}-[0-9]{2}$", ""), "Storage bins to count, as aisle-rack-level.", 1, 200
    ),
    "quantity_delta": number(
        "Signed correction: positive adds stock, negative removes it.", -1_000_000, 1_000_000
    ),
    "adjustment_reason": choice(
        ["count_difference", "damage", "expiry", "theft", "system_correction"], "Reason for the adjustment."
    ),
    "shipment_id": ident("^SHP[0-9]{9}$", "Shipment number, e.g. SHP000451278."),
    "hs_codes": listof(ident("^[0-9]{6,10}$", ""), "Harmonized System tariff codes of the goods.", 1, 50),
    "declared_value": money("Customs value of the goods."),
    "appointment_start": moment("Start of the dock slot (ISO 8601 with time zone)."),
    "carrier_scac": ident("^[A-Z]{2,4}$", "Standard carrier alpha code, e.g. DHLF."),
    "service_level": choice(["economy", "standard", "express", "overnight"], "Transit speed."),
    "claim_amount": money("Amount claimed from the carrier."),
    "damage_description": text("What was lost or damaged and how it was found.", 2000),
    "cmr_number": ident("^CMR[0-9]{8}$", "CMR consignment note number, e.g. CMR20250417."),
    "delivery_id": ident("^DL-[0-9]{8}$", "Delivery document number, e.g. DL-80012345."),
    # --- customer service ----------------------------------------------------------------------
    "order_id": ident("^ORD-[0-9]{9}$", "Customer order number, e.g. ORD-100234567."),
    "refund_amount": money("Amount to refund; may not exceed the amount paid."),
    "refund_reason": choice(
        ["damaged", "not_as_described", "late_delivery", "changed_mind", "wrong_item", "other"],
        "Reason code for the refund.",
    ),
    "store_id": ident("^ST[0-9]{4}$", "Store number where the customer returns the goods, e.g. ST0412."),
    "marketplace": choice(["amazon", "ebay", "zalando", "mercado_libre"], "Marketplace the order came from."),
    "subject": text("One-line summary of the customer's issue.", 160),
    "priority": choice(["low", "medium", "high", "urgent"], "Priority."),
    "callback_number": ident(PHONE, "Number the customer can be called back on (E.164)."),
    "case_id": ident(CASE, "Support case number, e.g. CS-20250611."),
    "escalation_reason": text("Why the case needs a higher tier.", 500),
    "product_area": choice(["billing", "mobile_app", "web_shop", "payments", "delivery", "account"], "Area."),
    "support_queue": choice(["general", "billing", "technical", "returns", "vip"], "Support queue."),
    "sku": ident("^SKU-[A-Z0-9]{8}$", "Stock keeping unit of the product, e.g. SKU-AB12CD34."),
    "serial_number": ident("^SN[A-Z0-9]{10}$", "Serial number printed on the device."),
    "rma_reason": choice(
        ["defective", "damaged_in_transit", "wrong_item", "no_longer_wanted"], "Reason for the return."
    ),
    "credit_amount": money("Credit amount.", 0.01, 5000),
    "voucher_expiry": day("Date the voucher expires."),
    "resolution_summary": text("How the issue was resolved, as told to the customer.", 1000),
    "duplicate_of_case_id": ident(CASE, "The case this one duplicates."),
    "email": email("Email address."),
    "primary_customer_id": ident(CUSTOMER, "Customer record that survives the merge."),
    "duplicate_customer_id": ident(CUSTOMER, "Customer record that is merged away."),
    "search_query": text("Keywords to search for.", 200),
    "loyalty_member_id": ident("^LOY[0-9]{9}$", "Loyalty programme member number."),
    "points": count("Number of points.", 1, 100_000),
    "points_reason": choice(
        ["service_recovery", "missing_purchase", "promotion", "fraud_correction", "expired_in_error"],
        "Reason code for the adjustment.",
    ),
    "callback_at": moment("When to call back (ISO 8601 with time zone)."),
    "subscription_id": ident("^SUB-[0-9]{8}$", "Subscription number, e.g. SUB-00451278."),
    "subscription_cancel_reason": choice(
        ["too_expensive", "not_using", "switching_provider", "quality_issues", "other"],
        "Reason the customer gives for cancelling.",
    ),
    "note_text": text("The note.", 4000),
    "social_handle": ident("^@[A-Za-z0-9_.]{2,30}$", "Customer's public handle, e.g. @jane_doe."),
    "shipping_method": choice(["standard", "express", "next_day"], "Shipping speed."),
    # --- IT service management -----------------------------------------------------------------
    "username": ident("^[a-z][a-z0-9._-]{2,19}$", "Login name of the account, e.g. jdoe."),
    "hostname": ident("^[a-z0-9-]{3,63}$", "Host name of the server or workstation."),
    "service_account": ident("^svc-[a-z0-9-]{3,30}$", "Name of the service account, e.g. svc-backup."),
    "short_description": text("One-line summary of the problem.", 160),
    "impact": choice(["1-high", "2-medium", "3-low"], "How many users or services are affected."),
    "urgency": choice(["1-high", "2-medium", "3-low"], "How soon it must be fixed."),
    "asset_tag": ident("^AST[0-9]{8}$", "Asset tag on the device sticker, e.g. AST00123456."),
    "application_name": text("Name of the business application.", 80),
    "site_location": text("Site, building and floor where the problem occurs.", 120),
    "ci_id": ident("^CI[0-9]{8}$", "Configuration item id in the CMDB."),
    "planned_start": moment("Planned start of the change window."),
    "planned_end": moment("Planned end of the change window."),
    "change_description": text("What will be changed and how it will be rolled back.", 4000),
    "change_template_id": ident("^STD-[0-9]{4}$", "Pre-approved standard change template."),
    "business_justification": text("Why the access is needed.", 500),
    "share_path": ident(
        "^\\\\\\\\fs[0-9]{2}\\\\[A-Za-z0-9_-]{2,40}$", "UNC path of the share, e.g. \\\\fs01\\finance."
    ),
    "access_level": choice(["read", "read_write", "owner"], "Requested access level."),
    "mfa_device_type": choice(["authenticator_app", "hardware_token", "sms"], "Second-factor device type."),
    "operating_system": choice(["windows_11", "macos", "ubuntu_lts"], "Operating system to install."),
    "sap_client": ident("^[0-9]{3}$", "Three-digit SAP client, e.g. 100."),
    "incident_id": ident(INCIDENT, "Incident number, e.g. INC0012345."),
    "work_note": text("Internal work note (not visible to the caller).", 4000),
    "resolution_code": choice(
        ["fixed", "workaround", "no_fault_found", "user_error", "duplicate", "vendor_fix"], "Resolution code."
    ),
    "resolution_notes": text("What was done to resolve the incident.", 4000),
    "problem_title": text("Title of the problem record.", 160),
    "related_incident_ids": listof(ident(INCIDENT, ""), "Incidents caused by the problem.", 1, 50),
    "service_name": choice(
        ["email", "vpn", "sap_erp", "crm", "intranet", "wifi", "printing", "video_conferencing"],
        "Business service.",
    ),
    "display_name": text("Display name shown in the address book.", 80),
    "owner_email": email("Email of the person who owns it."),
    "assignment_group": choice(
        ["service_desk", "network_ops", "workplace_tech", "sap_basis", "identity_access", "database_admin"],
        "Resolver group.",
    ),
    "software_name": text("Product name and version.", 120),
    "license_cost_center": ident(COST_CENTER, "Cost center charged for the licence."),
    # --- manufacturing -------------------------------------------------------------------------
    "equipment_id": ident("^EQ-[0-9]{6}$", "Equipment number of the machine, e.g. EQ-100452."),
    "planned_date": day("Date the work is planned for."),
    "interval_days": count("Repeat interval in days.", 7, 730),
    "failure_description": text("What failed and what was observed.", 1000),
    "sensor_alert_id": ident("^ALR-[0-9]{9}$", "Condition-monitoring alert that triggered the work."),
    "finish_date": day("Date by which production must be finished."),
    "batch_id": ident("^B[0-9]{10}$", "Batch number, e.g. B2025041701."),
    "production_order_id": ident("^MO-[0-9]{8}$", "Production order number, e.g. MO-10004512."),
    "operation_number": ident("^[0-9]{4}$", "Operation number in the routing, e.g. 0010."),
    "yield_quantity": number("Good quantity produced.", 0, 1_000_000),
    "scrap_quantity": number("Scrapped quantity.", 0, 1_000_000),
    "inspection_lot_id": ident("^IL[0-9]{10}$", "Inspection lot number."),
    "inspection_result": choice(["accept", "reject", "conditional_accept"], "Usage decision."),
    "defect_count": count("Number of defects found.", 0, 10_000),
    "quality_hold_reason": choice(
        ["out_of_spec", "contamination_suspected", "customer_complaint", "supplier_recall", "pending_lab"],
        "Why the batch is held.",
    ),
    "start_time": moment("Start time (ISO 8601 with time zone)."),
    "end_time": moment("End time (ISO 8601 with time zone)."),
    "failure_code": choice(
        ["electrical", "mechanical", "hydraulic", "software", "operator", "material_shortage"],
        "Failure class.",
    ),
    "line_id": ident("^LN-[A-Z]{2}[0-9]{2}-[0-9]{2}$", "Production line id, e.g. LN-DE01-03."),
    "scrap_reason": choice(
        ["setup_loss", "dimensional", "surface_defect", "material_defect", "handling_damage"], "Scrap cause."
    ),
    "severity": choice(["minor", "major", "critical"], "Severity."),
    "shutdown_id": ident("^SD-[0-9]{4}-[0-9]{2}$", "Planned shutdown (turnaround) event, e.g. SD-2025-02."),
    "instrument_id": ident("^INS-[0-9]{6}$", "Measuring instrument id."),
    "work_center_id": ident("^WC-[0-9]{5}$", "Work center id, e.g. WC-20031."),
    "occurred_at": moment("When it happened."),
    "change_reason": choice(
        ["cost_reduction", "quality_improvement", "supplier_change", "regulatory", "customer_request"],
        "Driver of the change.",
    ),
    # --- facilities and real estate ------------------------------------------------------------
    "building_id": ident(BUILDING, "Building id, e.g. BLD-MUC-02."),
    "attendees": count("Expected number of attendees.", 1, 500),
    "catering": flag("Whether catering is needed.", False),
    "location_detail": text("Floor, room or area inside the building.", 120),
    "request_description": text("What needs to be done.", 1000),
    "visitor_name": text("Full name of the visitor.", 120),
    "visitor_email": email("Visitor's email; the invitation is sent there."),
    "host_employee_id": ident(EMP, "Employee id of the host."),
    "visit_date": day("Date of the visit."),
    "lease_id": ident("^LSE-[0-9]{6}$", "Lease contract id, e.g. LSE-000217."),
    "license_plate": ident("^[A-Z0-9 -]{2,10}$", "Vehicle registration plate."),
    "floor": count("Floor number (0 = ground floor).", -3, 80),
    "booking_reference": ident("^BKG-[0-9]{8}$", "Workplace booking reference."),
    "hazard_type": choice(
        ["trip_hazard", "electrical", "fire_safety", "water_leak", "blocked_exit", "other"], "Hazard."
    ),
    "target_building_id": ident(BUILDING, "Building the employee moves to."),
    "target_desk_id": ident("^[A-Z]{3}-[0-9]{2}-[0-9]{3}$", "Desk code, e.g. MUC-03-114."),
    "move_date": day("Date of the move."),
    "month": ident(PERIOD, "Calendar month as YYYY-MM."),
    "supply_items": listof(
        record(
            {
                "item_code": ident("^OS-[0-9]{5}$", "Office supplies catalogue code."),
                "quantity": count("How many.", 1, 500),
            },
            ["item_code", "quantity"],
            "One item.",
        ),
        "Items to order.",
        1,
        50,
    ),
    "delivery_location": text("Building, floor and room to deliver to.", 120),
    "termination_date": day("Date the termination takes effect."),
    "termination_notice_reason": choice(
        ["consolidation", "relocation", "cost_reduction", "end_of_need"], "Why the lease is terminated."
    ),
    "pickup_location": text("Where the courier collects the packages.", 120),
    "package_count": count("Number of packages.", 1, 50),
    "destination_country_code": ident(COUNTRY, "Destination country (ISO 3166-1 alpha-2)."),
    "badge_loss_reason": choice(["lost", "stolen", "damaged", "name_change"], "Why a new badge is needed."),
    # --- marketing -----------------------------------------------------------------------------
    "campaign_name": text("Internal campaign name.", 100),
    "audience_segment_id": ident("^SEG-[0-9]{6}$", "Audience segment id, e.g. SEG-000431."),
    "social_platforms": listof(
        choice(["linkedin", "instagram", "facebook", "x", "tiktok", "youtube"], ""), "Platforms.", 1, 6
    ),
    "daily_budget": money("Maximum spend per day.", 1, 100_000),
    "keywords": listof(text("", 80), "Keywords to bid on.", 1, 200),
    "campaign_id": ident("^CMP-[0-9]{6}$", "Campaign id, e.g. CMP-004512."),
    "asset_id": ident("^DAM-[0-9]{8}$", "Digital asset id in the asset library."),
    "segment_name": text("Name of the new segment.", 100),
    "segment_rules": text("Filter rules, e.g. 'industry = retail AND country = FR'.", 1000),
    "seed_segment_id": ident("^SEG-[0-9]{6}$", "Segment whose members the look-alike is modelled on."),
    "mailing_list_id": ident("^LST-[0-9]{5}$", "Mailing list id."),
    "marketing_event_id": ident("^EVT-[0-9]{6}$", "Marketing event id, e.g. EVT-000318."),
    "attendee_email": email("Attendee's email."),
    "attendee_name": text("Attendee's full name.", 120),
    "badge_type": choice(["visitor", "exhibitor", "press", "speaker"], "Badge type."),
    "sales_owner_id": ident(EMP, "Employee id of the sales rep who takes the lead."),
    "nurture_track": choice(["awareness", "product_education", "reengagement"], "Nurture stream."),
    "social_channel": choice(["linkedin", "instagram", "facebook", "x"], "Social channel."),
    "post_text": text("Text of the post.", 280),
    "publish_at": moment("When to publish (ISO 8601 with time zone)."),
    "file_name": ident("^[A-Za-z0-9_. -]{1,120}\\.(png|jpg|pdf|mp4|pptx)$", "File name with extension."),
    "asset_type": choice(["image", "video", "presentation", "brochure", "logo"], "Kind of asset."),
    "tags": listof(text("", 40), "Search tags.", 1, 20),
    "file_url": url("HTTPS link to the file."),
    "destination_url": url("Landing page the link points to."),
    "utm_source": ident("^[a-z0-9_-]{2,50}$", "utm_source value, e.g. newsletter."),
    "utm_medium": choice(["email", "social", "cpc", "display", "referral", "event"], "utm_medium value."),
    "utm_campaign": ident("^[a-z0-9_-]{2,50}$", "utm_campaign value, e.g. spring_launch_2025."),
    "variant_a_subject": text("Subject line of variant A.", 120),
    "variant_b_subject": text("Subject line of variant B.", 120),
    "split_percent": count("Share of the audience that receives variant A, in percent.", 10, 90),
    "target_languages": listof(
        choice(["de", "fr", "es", "it", "ja", "zh", "pt", "nl"], ""),
        "Languages to translate into (ISO 639-1).",
        1,
        8,
    ),
    "press_title": text("Headline of the release.", 160),
    "press_body": text("Body text of the release.", 10_000),
    "embargo_until": moment("Embargo end; the release is not published before it."),
    # --- travel and expense --------------------------------------------------------------------
    "origin_airport": ident("^[A-Z]{3}$", "IATA code of the departure airport, e.g. FRA."),
    "destination_airport": ident("^[A-Z]{3}$", "IATA code of the arrival airport, e.g. JFK."),
    "departure_date": day("Outbound travel date."),
    "return_date": day("Return travel date; omit for one-way."),
    "cabin_class": choice(["economy", "premium_economy", "business", "first"], "Cabin class."),
    "passport_country": ident(COUNTRY, "Issuing country of the traveler's passport."),
    "flight_legs": listof(
        record(
            {
                "origin_airport": ident("^[A-Z]{3}$", "Departure airport (IATA)."),
                "destination_airport": ident("^[A-Z]{3}$", "Arrival airport (IATA)."),
                "departure_date": day("Travel date of the leg."),
            },
            ["origin_airport", "destination_airport", "departure_date"],
            "One flight leg.",
        ),
        "The legs in travel order.",
        2,
        6,
    ),
    "check_in_date": day("Check-in date."),
    "check_out_date": day("Check-out date."),
    "pickup_datetime": moment("When the car is collected."),
    "return_datetime": moment("When the car is returned."),
    "car_class": choice(["compact", "intermediate", "full_size", "suv", "electric"], "Vehicle class."),
    "trip_purpose": text("Business purpose of the trip.", 300),
    "estimated_cost": money("Estimated total cost of the trip."),
    "traveler_ids": listof(ident(EMP, ""), "Employee ids of everyone travelling.", 2, 50),
    "trip_id": ident("^TRP-[0-9]{7}$", "Trip id, e.g. TRP-0031337."),
    "report_title": text("Title of the expense report.", 80),
    "expense_attendees": listof(text("", 120), "Name and company of everyone who attended.", 1, 30),
    "expense_report_id": ident("^ER-[0-9]{8}$", "Expense report number, e.g. ER-00451278."),
    "expense_date": day("Date the expense was incurred."),
    "expense_category": choice(
        [
            "airfare",
            "lodging",
            "meals",
            "ground_transport",
            "client_entertainment",
            "conference_fees",
            "other",
        ],
        "Expense type.",
    ),
    "number_of_days": count("Number of travel days claimed.", 1, 60),
    "distance_km": number("Distance driven in kilometres.", 0.1, 5000),
    "vehicle_type": choice(["car", "motorcycle", "electric_car"], "Private vehicle used."),
    "exception_justification": text("Why the policy exception is accepted.", 500),
    "threshold_amount": money("Only reports with a total at or below this amount.", 1, 10_000),
    "card_last_four": ident("^[0-9]{4}$", "Last four digits of the corporate card."),
    "card_transaction_id": ident("^CTX-[0-9]{10}$", "Card transaction id from the card feed."),
    "dispute_details": text("What is wrong with the transaction.", 1000),
    "monthly_limit": money("Requested monthly spending limit.", 500, 100_000),
    "flight_booking_reference": ident("^[A-Z0-9]{6}$", "Six-character airline booking reference (PNR)."),
    "hotel_confirmation_number": ident("^H[0-9]{9}$", "Hotel confirmation number from the travel agency."),
    "airline_code": ident("^[A-Z0-9]{2}$", "Two-character IATA airline code, e.g. LH."),
    "frequent_flyer_number": ident("^[A-Z0-9]{6,12}$", "Frequent-flyer membership number."),
    "passport_number": ident("^[A-Z0-9]{6,9}$", "Passport number."),
    "passport_expiry": day("Passport expiry date."),
    "nationality": ident(COUNTRY, "Nationality (ISO 3166-1 alpha-2)."),
    "delegate_employee_id": ident(EMP, "Employee id of the delegate."),
    "transaction_date": day("Date of the transaction; the rate of that day is used."),
    "origin_station": text("Departure station name, e.g. Koeln Hbf.", 80),
    "destination_station": text("Arrival station name.", 80),
    "travel_date": day("Travel date."),
    "needed_by_date": day("Date the money is needed."),
    "expense_item_id": ident("^EI-[0-9]{10}$", "Expense line id."),
    "state_code": ident("^[A-Z]{2}$", "Two-letter state or province code, e.g. CA."),
    "cost_center_splits": listof(
        record(
            {
                "cost_center": ident(COST_CENTER, "Cost center to charge."),
                "percent": number("Share of the expense, in percent.", 1, 100),
            },
            ["cost_center", "percent"],
            "One share.",
        ),
        "How the expense is divided; the shares must add up to 100.",
        2,
        10,
    ),
    "advance_purpose": text("What the advance will pay for.", 300),
    # --- legal and compliance ------------------------------------------------------------------
    "counterparty_name": text("Legal name of the other party.", 160),
    "document_url": url("Link to the draft in the document management system."),
    "needed_by": day("Date the reviewed document is needed."),
    "contract_value": money("Total contract value over its term."),
    "counterparty_country": ident(COUNTRY, "Country where the counterparty is incorporated."),
    "disclosing_party": choice(["us", "counterparty"], "Which side discloses confidential information."),
    "nda_purpose": text("Purpose for which information is shared.", 300),
    "matter_id": ident("^LM-[0-9]{6}$", "Legal matter id, e.g. LM-002417."),
    "custodian_ids": listof(ident(EMP, ""), "Employee ids of the custodians.", 1, 200),
    "legal_hold_id": ident("^LH-[0-9]{6}$", "Legal hold id, e.g. LH-000381."),
    "full_name": text("Full name as written on official documents.", 160),
    "date_of_birth": day("Date of birth, if known."),
    "entity_name": text("Registered name of the company.", 160),
    "registration_number": ident("^[A-Z0-9-]{4,20}$", "Company registration number, if known."),
    "disclosure_id": ident("^COI-[0-9]{6}$", "Conflict-of-interest disclosure id."),
    "disclosure_text": text("Description of the outside interest or relationship.", 2000),
    "policy_id": ident("^POL-[0-9]{4}$", "Policy id, e.g. POL-0042."),
    "gift_description": text("What the gift or hospitality was.", 300),
    "estimated_gift_value": money("Estimated value.", 0.01, 100_000),
    "event_date": day("Date the gift or hospitality was given or received."),
    "government_official": flag("Whether the other party is a public official.", False),
    "data_subject_email": email("Email of the person who made the request."),
    "privacy_regime": choice(["GDPR", "UK_GDPR", "CCPA", "LGPD", "PIPEDA"], "Applicable privacy law."),
    "received_date": day("Date the request or document was received."),
    "matter_title": text("Short title of the matter.", 160),
    "opposing_party": text("Name of the opposing party or authority.", 160),
    "jurisdiction": ident(COUNTRY, "Country of the court or authority."),
    "matter_description": text("Summary of the facts.", 4000),
    "signer_emails": listof(email(""), "Signers' emails, in signing order where order matters.", 1, 10),
    "ethics_category": choice(
        ["fraud", "bribery", "harassment", "discrimination", "safety", "data_misuse", "other"], "Category."
    ),
    "report_text": text("What happened, when and who was involved.", 8000),
    "anonymous": flag("Whether the reporter stays anonymous.", True),
    "mark_text": text("The word mark as it should be registered.", 80),
    "nice_classes": listof(count("", 1, 45), "Nice classification classes (1-45).", 1, 45),
    "legal_entity_id": ident("^LE-[0-9]{4}$", "Legal entity id, e.g. LE-0100."),
    "designated_countries": listof(
        ident(COUNTRY, ""), "Countries designated under the Madrid Protocol.", 1, 60
    ),
    "record_type": choice(
        ["invoice", "employment_file", "contract", "email", "board_minutes", "tax_return"], "Record type."
    ),
    "technical_description": text("Technical description of the item, including performance data.", 4000),
    "regulator": choice(["SEC", "FCA", "BaFin", "ESMA", "EPA", "FDA", "CNIL", "ICO", "other"], "Regulator."),
    "filing_type": text("Name of the filing, e.g. annual report or 10-Q.", 120),
    "grantee_employee_id": ident(EMP, "Employee who receives the power of attorney."),
    "poa_scope": text("What the power of attorney allows the holder to sign.", 1000),
    "finding_id": ident("^AF-[0-9]{5}$", "Audit finding id, e.g. AF-00213."),
    "remediation_plan": text("Planned remediation steps.", 4000),
    "owner_employee_id": ident(EMP, "Employee id of the accountable owner."),
    "target_date": day("Target completion date."),
    "project_name": text("Project or system name.", 120),
    "data_categories": listof(
        choice(["contact", "financial", "health", "biometric", "location", "hr", "children"], ""),
        "Categories of personal data processed.",
        1,
        7,
    ),
    "processing_purpose": text("Why the data is processed.", 1000),
    "new_end_date": day("New end date of the contract."),
    "amendment_summary": text("What the amendment changes.", 2000),
    "legal_invoice_id": ident("^LI-[0-9]{7}$", "Outside counsel invoice id."),
    "invoice_rejection_reason": choice(
        ["rate_above_agreement", "block_billing", "unapproved_timekeeper", "outside_scope", "duplicate"],
        "Reason for rejecting.",
    ),
    "issuing_authority": text("Court or agency that issued it.", 160),
    "response_due_date": day("Deadline for the response."),
    "deal_name": text("Code name of the transaction.", 80),
    "counterparties": listof(text("", 160), "Names of the other parties.", 1, 10),
    "deal_value": money("Transaction value."),
    "record_ids": listof(ident("^REC-[0-9]{8}$", ""), "Record ids to destroy.", 1, 500),
    "third_party_name": text("Legal name of the third party.", 160),
    "risk_reason": text("Red flag that calls for enhanced checks.", 500),
    "legal_form": choice(["GmbH", "AG", "Ltd", "LLC", "Inc", "SAS", "BV", "KK"], "Legal form of the entity."),
    "review_area": choice(["finance", "it", "procurement", "hr", "operations", "sales"], "Audited area."),
}


def param(key: str, override: str | dict[str, Any] | None = None) -> dict[str, Any]:
    """A copy of a library spec, with its description (a string) or any fields (a dict) replaced."""
    if key not in P:
        raise KeyError(f"unknown parameter {key!r}")
    spec = json.loads(json.dumps(P[key]))
    if isinstance(override, str):
        spec["description"] = override
    elif isinstance(override, dict):
        spec.update(override)
    return spec


# --------------------------------------------------------------------------------------------
# Tool composition: families of near-duplicate variants and singletons
# --------------------------------------------------------------------------------------------


@dataclass
class Variant:
    name: str
    fill: dict[str, str]
    add_req: tuple[Any, ...] = ()
    add_opt: tuple[Any, ...] = ()
    drop: tuple[str, ...] = ()
    desc: str | None = None


@dataclass
class ToolSpec:
    name: str
    description: str
    lob: str
    family: str
    required: list[Any] = field(default_factory=list)
    optional: list[Any] = field(default_factory=list)


SPECS: list[ToolSpec] = []


def v(
    name: str,
    *,
    add_req: tuple[Any, ...] | list[Any] = (),
    add_opt: tuple[Any, ...] | list[Any] = (),
    drop: tuple[str, ...] | list[str] = (),
    desc: str | None = None,
    **fill: str,
) -> Variant:
    """One family member: its name, the template fields, and how its parameters differ."""
    return Variant(name, fill, tuple(add_req), tuple(add_opt), tuple(drop), desc)


def _key(ref: Any) -> str:
    return ref if isinstance(ref, str) else ref[0]


def fam(
    fid: str, lob: str, template: str, req: Sequence[Any], opt: Sequence[Any], *variants: Variant
) -> None:
    """A family of near-duplicates sharing a description template and most parameters."""
    if len(variants) < 2:
        raise ValueError(f"family {fid} needs at least two variants")
    for var in variants:
        description = var.desc if var.desc is not None else template.format(**var.fill)
        required = [r for r in req if _key(r) not in var.drop] + list(var.add_req)
        optional = [o for o in opt if _key(o) not in var.drop] + list(var.add_opt)
        SPECS.append(ToolSpec(var.name, description, lob, f"{LOB_PREFIX[lob]}.{fid}", required, optional))


def one(name: str, lob: str, description: str, req: Sequence[Any] = (), opt: Sequence[Any] = ()) -> None:
    """A singleton tool: a family of its own."""
    SPECS.append(ToolSpec(name, description, lob, f"{LOB_PREFIX[lob]}.{name}", list(req), list(opt)))


# ============================================================================================
# finance
# ============================================================================================

fam(
    "journal_post",
    FIN,
    "Posts a balanced journal entry to the {ledger} of one company code. {detail} Lines are checked "
    "against the chart of accounts and the open posting periods; once posted, the entry can only be "
    "reversed, never edited.",
    ["company_code", "posting_date", "journal_lines"],
    ["header_text"],
    v(
        "post_journal_entry_us_gaap",
        ledger="US GAAP leading ledger",
        detail="Use it for group reporting under US accounting standards.",
    ),
    v(
        "post_journal_entry_ifrs",
        ledger="IFRS parallel ledger",
        detail="The amounts only affect the IFRS valuation and leave the US GAAP books untouched.",
    ),
    v(
        "post_journal_entry_local_gaap",
        ledger="local statutory ledger",
        detail="It needs the country whose statutory rules apply, such as HGB for DE or PCG for FR.",
        add_req=["country_code"],
    ),
)
fam(
    "invoice_status",
    FIN,
    "Looks up where {kind} stands right now: {stages}. Read-only. {hint}",
    [],
    ["company_code"],
    v(
        "get_invoice_status_ap",
        kind="a supplier invoice in accounts payable",
        stages="parked, blocked for payment, approved or paid, with the planned payment date",
        hint="Search by the vendor invoice document number, not by the purchase order.",
        add_req=[
            (
                "invoice_id",
                {
                    "pattern": "^VI-[0-9]{8}$",
                    "description": "Supplier invoice document number, e.g. VI-20250417.",
                },
            )
        ],
    ),
    v(
        "get_invoice_status_ar",
        kind="an invoice we issued to a customer (accounts receivable)",
        stages="open, partially cleared, in dunning or fully paid, with the amount still outstanding",
        hint="Search by the billing document number printed on the customer's copy.",
        add_req=[
            (
                "invoice_id",
                {
                    "pattern": "^BL-[0-9]{8}$",
                    "description": "Billing document number printed on the customer invoice, e.g. BL-90001234.",
                },
            )
        ],
    ),
)
fam(
    "payment_run",
    FIN,
    "Schedules the automatic {channel} payment run of a company code for the given date. {detail} "
    "With dry_run set, only the proposal list is produced and no money leaves the house bank.",
    ["company_code", "run_date"],
    ["vendor_ids", "dry_run"],
    v(
        "schedule_payment_run_domestic",
        channel="domestic",
        detail="It pays suppliers whose bank accounts are in the company code's own country, by local ACH or giro transfer.",
    ),
    v(
        "schedule_payment_run_sepa",
        channel="SEPA",
        detail="Only EUR items owed to suppliers with an IBAN in the SEPA zone are picked up.",
    ),
    v(
        "schedule_payment_run_cross_border",
        channel="cross-border",
        detail="It settles foreign suppliers by SWIFT wire in the payment currency you name; bank charges are shared.",
        add_req=["payment_currency"],
    ),
)
fam(
    "fx_rate",
    FIN,
    "Returns the {rate} between two ISO 4217 currencies. {detail}",
    ["from_currency", "to_currency"],
    [],
    v(
        "get_exchange_rate_spot",
        rate="daily spot exchange rate",
        detail="This is the rate used to translate documents on their posting date; pass rate_date for a past day.",
        add_opt=["rate_date"],
    ),
    v(
        "get_exchange_rate_monthly_average",
        rate="monthly average exchange rate",
        detail="Profit and loss items are translated at this average for consolidation, one value per fiscal period.",
        add_req=["fiscal_period"],
    ),
    v(
        "get_exchange_rate_budget",
        rate="fixed budget (plan) exchange rate",
        detail="Planning and constant-currency reporting use it; it is set once per fiscal year and does not move.",
        add_req=["fiscal_year"],
    ),
)
fam(
    "cost_center_report",
    FIN,
    "Reports {what} for one cost center{period}. {detail}",
    ["cost_center"],
    [],
    v(
        "get_cost_center_actuals",
        what="actual costs posted",
        period=" in a fiscal period",
        detail="Totals are broken down by cost element; commitments and plan values are not included.",
        add_req=["fiscal_period"],
    ),
    v(
        "get_cost_center_plan_vs_actual",
        what="plan against actual spend",
        period=" in a fiscal period",
        detail="Each cost element shows plan, actual, absolute variance and variance in percent.",
        add_req=["fiscal_period"],
    ),
    v(
        "get_cost_center_open_commitments",
        what="open commitments (purchase orders and requisitions not yet invoiced)",
        period="",
        detail="Use it to see money that is already promised but not yet booked as actual cost.",
    ),
)
fam(
    "vendor_payment_block",
    FIN,
    "{verb} the payment block on a supplier account in one company code. {detail}",
    ["vendor_id", "company_code"],
    [],
    v(
        "block_vendor_payments",
        verb="Sets",
        detail="Open items stay on the books but every payment run skips them until the block is lifted.",
        add_req=["payment_block_reason"],
    ),
    v(
        "unblock_vendor_payments",
        verb="Removes",
        detail="Items that are already due are picked up again by the next payment run.",
    ),
)
fam(
    "open_items",
    FIN,
    "Lists open {ledger} items{scope}. Filters are optional; without them, everything open in the "
    "company codes you are authorised for comes back, oldest due date first.",
    [],
    ["company_code", "due_before", "min_amount"],
    v("list_open_items_ap", ledger="accounts payable", scope=", i.e. supplier invoices not yet paid"),
    v("list_open_items_ar", ledger="accounts receivable", scope=", i.e. customer invoices not yet settled"),
    v(
        "list_open_items_gl",
        ledger="general ledger",
        scope=" on open-item managed accounts such as clearing and GR/IR accounts",
        add_opt=["gl_account"],
    ),
)
fam(
    "accrual",
    FIN,
    "Books an accrual for expenses incurred but not yet invoiced. {detail}",
    ["company_code", "gl_account", "amount", "posting_date"],
    [
        ("currency", "Currency of the amount; defaults to the company code currency."),
        "cost_center",
        "header_text",
    ],
    v(
        "post_accrual_one_time",
        detail="The entry is posted once and reversed automatically on the first day of the next period.",
    ),
    v(
        "post_accrual_recurring",
        detail="The same accrual is re-posted at the chosen interval until the last posting date, each "
        "time with its own automatic reversal.",
        add_req=["recurrence"],
        add_opt=["last_posting_date"],
    ),
)
fam(
    "dunning_hold",
    FIN,
    "{what} Applies to every open receivable of the customer.",
    ["customer_id"],
    [],
    v(
        "hold_dunning_for_customer",
        what="Stops payment reminders to a customer until a given date, e.g. while a payment plan runs.",
        add_req=["dunning_hold_until", "dunning_hold_reason"],
    ),
    v(
        "release_dunning_hold",
        what="Lifts a dunning hold early so that the next dunning run sends reminders to the customer again.",
    ),
)
one(
    "get_current_fiscal_period",
    FIN,
    "Tells you which fiscal period and year are current for a company code and whether the period is "
    "still open for posting.",
    opt=["company_code"],
)
one(
    "get_gl_account_balance",
    FIN,
    "Balance of a general ledger account at the end of a fiscal period, in company code currency, with "
    "the period's debit and credit totals.",
    ["gl_account", "company_code", "fiscal_period"],
)
one(
    "list_my_unposted_journal_drafts",
    FIN,
    "Your own journal entries that were saved as drafts or parked and have not been posted yet.",
)
one(
    "run_bank_statement_reconciliation",
    FIN,
    "Matches the lines of an imported bank statement to open items and clears what matches. Anything "
    "left unmatched lands in the reconciliation worklist for manual review.",
    ["bank_account_id", "statement_date"],
)
one(
    "request_budget_transfer",
    FIN,
    "Raises a request to move budget from one cost center to another. Controlling approves it before "
    "the plan values change; nothing moves until then.",
    [
        "from_cost_center",
        "to_cost_center",
        "amount",
        "currency",
        ("fiscal_period", "Period whose budget moves."),
        "justification",
    ],
)
one(
    "export_trial_balance",
    FIN,
    "Exports the trial balance of a company code for one fiscal period as a file and returns a "
    "download link that stays valid for 24 hours.",
    ["company_code", "fiscal_period"],
    ["file_format"],
)
one(
    "get_fixed_asset_depreciation_schedule",
    FIN,
    "Shows the planned depreciation of a fixed asset year by year, with net book value, for the "
    "requested valuation area.",
    ["fixed_asset_id"],
    ["depreciation_area"],
)
one(
    "reverse_journal_entry",
    FIN,
    "Creates the mirror-image document of a posted journal entry so that its effect is cancelled. The "
    "original stays in the journal, flagged as reversed.",
    ["journal_entry_id", "reversal_date", "reversal_reason"],
)
one(
    "get_customer_credit_exposure",
    FIN,
    "Credit limit, current exposure (open receivables plus open orders) and headroom of one customer "
    "account.",
    ["customer_id"],
)
one(
    "list_posting_period_status",
    FIN,
    "Which posting periods are open or closed for each account type. Useful at month-end to see why a "
    "posting was rejected.",
    opt=["company_code"],
)
one(
    "list_payments_pending_my_approval",
    FIN,
    "Payment proposals and manual payments waiting for your release as second approver.",
)
one(
    "get_month_end_close_checklist",
    FIN,
    "The month-end close checklist with each task's owner, due day and status. Defaults to the current "
    "period of every company code you can see.",
    opt=["company_code", "fiscal_period"],
)
one(
    "list_overdue_customer_invoices",
    FIN,
    "Customer invoices past their due date, sorted by days overdue, for collections follow-up.",
    opt=["days_overdue_min", "customer_id", "company_code"],
)
one(
    "get_cash_position_today",
    FIN,
    "Today's cash position across house banks: opening balance, booked inflows and outflows, and the "
    "projected closing balance.",
    opt=["currency"],
)


# ============================================================================================
# procurement
# ============================================================================================

fam(
    "requisition_create",
    PROC,
    "Creates a purchase requisition for {what}. {detail} The requisition goes through the approval "
    "workflow of the cost center before purchasing turns it into an order.",
    ["cost_center", "delivery_date"],
    ["notes"],
    v(
        "create_purchase_requisition",
        what="stock or non-stock goods identified by material number",
        detail="Quantity is in the material's base unit unless you pass a unit of measure.",
        add_req=["material_id", "quantity"],
        add_opt=["unit_of_measure"],
    ),
    v(
        "create_service_purchase_requisition",
        what="services such as consulting, repairs or temporary labour",
        detail="Instead of a material, describe the work; the delivery date is the day the service must start.",
        add_req=["service_description", "amount"],
        add_opt=[
            ("currency", "Currency of the estimated amount; defaults to the company code currency."),
            "service_end_date",
        ],
    ),
    v(
        "create_catalog_purchase_requisition",
        what="an item picked from the negotiated procurement catalog",
        detail="Price and supplier are taken from the catalog entry, so only the catalog item and quantity are needed.",
        add_req=["catalog_item_id", "quantity"],
    ),
)
fam(
    "po_approve",
    PROC,
    "{what} {detail}",
    [],
    ["approver_comment"],
    v(
        "approve_purchase_order_standard",
        what="Approves one purchase order that is waiting in your inbox under the normal release strategy.",
        detail="The order is sent to the supplier as soon as the last approval step is complete.",
        add_req=["purchase_order_id"],
    ),
    v(
        "approve_purchase_order_emergency",
        what="Approves one purchase order under the emergency release procedure, skipping the second approver.",
        detail="A justification is mandatory and the approval is reported to internal audit.",
        add_req=["purchase_order_id", "justification"],
    ),
    v(
        "approve_all_pending_purchase_orders",
        what="Approves every purchase order currently waiting for your release in one batch.",
        detail="Pass max_amount to leave larger orders in the inbox for individual review.",
        add_opt=["max_amount"],
    ),
)
fam(
    "goods_receipt",
    PROC,
    "Posts {what} against a purchase order item. {detail}",
    ["purchase_order_id", "item_number"],
    [],
    v(
        "post_goods_receipt_full",
        what="the goods receipt for the full open quantity",
        detail="Stock increases and the GR/IR clearing account is credited, which lets the invoice be matched.",
    ),
    v(
        "post_goods_receipt_partial",
        what="a goods receipt for part of the ordered quantity",
        detail="The rest of the item stays open for later deliveries.",
        add_req=["received_quantity"],
    ),
    v(
        "post_goods_receipt_return",
        what="a return delivery to the supplier",
        detail="This reverses stock for the quantity sent back and records why it was returned.",
        add_req=["received_quantity", "return_reason"],
    ),
)
fam(
    "supplier_onboarding",
    PROC,
    "Starts onboarding of a new {where} supplier. {detail} The supplier receives a self-service link "
    "at the contact email to complete bank and compliance data.",
    ["supplier_name", "tax_id", "contact_email"],
    ["purchasing_category"],
    v(
        "onboard_supplier_domestic",
        where="domestic",
        detail="The tax id is validated against the national register of the buying company's country.",
    ),
    v(
        "onboard_supplier_foreign",
        where="foreign",
        detail="Sanctions screening and a withholding-tax check for the supplier's country run before approval.",
        add_req=["country_code"],
    ),
)
fam(
    "rfq",
    PROC,
    "Publishes a request for quotation as {how}. {detail}",
    ["material_id", "quantity", "bid_deadline"],
    [("rfq_title", "Title shown to bidders; defaults to the material description.")],
    v(
        "create_rfq_open_bidding",
        how="an open event on the supplier portal",
        detail="Any registered supplier in the material's category can see it and bid.",
    ),
    v(
        "create_rfq_invited_suppliers",
        how="a closed event",
        detail="Only the suppliers you list are invited and can see the event.",
        add_req=["vendor_ids"],
    ),
    v(
        "create_rfq_reverse_auction",
        how="a live reverse auction",
        detail="Suppliers bid prices down against each other in real time during the auction window.",
        add_req=["auction_start"],
    ),
)
fam(
    "release_order",
    PROC,
    "Calls off a quantity from an existing {agreement}. {detail}",
    ["outline_agreement_id", "quantity", "delivery_date"],
    [],
    v(
        "create_contract_release_order",
        agreement="value or quantity contract",
        detail="A purchase order is created at the contract price and the contract's remaining value goes down.",
    ),
    v(
        "create_scheduling_agreement_release",
        agreement="scheduling agreement",
        detail="A delivery schedule line is added; no separate purchase order document is created.",
    ),
)
fam(
    "supplier_assessment",
    PROC,
    "{what} for one supplier. {detail}",
    ["vendor_id"],
    [],
    v(
        "get_supplier_scorecard",
        what="Performance scorecard",
        detail="Scores on-time delivery, quality and price compliance over the last twelve months.",
    ),
    v(
        "get_supplier_risk_rating",
        what="Risk rating",
        detail="Combines financial health, sanctions, ESG and country risk into one rating with the drivers.",
    ),
)
fam(
    "requisition_lists",
    PROC,
    "Lists {who} {state}. Returns requisition number, cost center, value and current approver.",
    [],
    [],
    v(
        "list_my_open_requisitions",
        who="purchase requisitions you created",
        state="that are not yet converted into orders",
    ),
    v(
        "list_team_open_requisitions",
        who="purchase requisitions raised by anyone in your team",
        state="that are still open",
        add_opt=["cost_center"],
    ),
    v(
        "list_requisitions_awaiting_my_approval",
        who="purchase requisitions from other people",
        state="that are waiting for your approval decision",
    ),
)
fam(
    "invoice_match",
    PROC,
    "Runs a {kind} match for a supplier invoice: {detail} Price or quantity differences outside tolerance "
    "block the invoice for payment.",
    [("invoice_id", "Supplier invoice document number, e.g. VI-20250417."), "purchase_order_id"],
    [],
    v(
        "run_three_way_match",
        kind="three-way",
        detail="invoice against purchase order and the posted goods receipt.",
    ),
    v(
        "run_two_way_match",
        kind="two-way",
        detail="invoice against purchase order only, for services and items without goods receipt.",
    ),
)
one(
    "cancel_purchase_order",
    PROC,
    "Cancels a purchase order that has no goods receipt yet and notifies the supplier by email.",
    ["purchase_order_id", "po_cancellation_reason"],
)
one(
    "change_purchase_order_delivery_date",
    PROC,
    "Moves the delivery date of one purchase order item, for example after the supplier confirms a delay. "
    "MRP sees the new date at its next run.",
    ["purchase_order_id", "item_number", "new_delivery_date"],
)
one(
    "get_catalog_item_price",
    PROC,
    "Current negotiated price of a catalog item, including quantity-based price breaks.",
    ["catalog_item_id"],
    ["quantity"],
)
one(
    "search_approved_suppliers",
    PROC,
    "Searches the approved supplier list by spend category and country. Blocked and pending suppliers "
    "are left out.",
    opt=["purchasing_category", "country_code"],
)
one(
    "get_purchasing_spend_summary",
    PROC,
    "Spend by category and top suppliers for a fiscal year, with the share under contract.",
    opt=["fiscal_year", "company_code"],
)
one(
    "update_supplier_bank_details",
    PROC,
    "Changes the bank account on a supplier record. The change is held for a call-back verification "
    "with the supplier and only becomes active after a second person confirms it.",
    ["vendor_id", "iban", "swift_bic", "effective_date"],
)
one(
    "get_open_purchase_orders_for_vendor",
    PROC,
    "All purchase orders of one supplier that still have open quantities or values.",
    ["vendor_id"],
)
one(
    "get_procurement_policy_thresholds",
    PROC,
    "Approval thresholds of the procurement policy: how many quotes and which approvers are needed at "
    "each order value.",
)
one(
    "create_purchase_order_from_requisition",
    PROC,
    "Converts an approved purchase requisition into a purchase order. If no supplier is given, the "
    "source list decides.",
    ["requisition_id"],
    ["vendor_id"],
)
one(
    "request_new_material_master",
    PROC,
    "Asks master data management to create a new material. You get a ticket number; the material number "
    "follows once the record is approved.",
    ["material_description", "material_group", ("unit_of_measure", "Base unit of measure.")],
)
one(
    "list_expiring_supplier_contracts",
    PROC,
    "Supplier contracts and outline agreements that end within the look-ahead window (90 days unless "
    "you say otherwise).",
    opt=["days_ahead", "purchasing_category"],
)
one(
    "list_my_pending_goods_receipts",
    PROC,
    "Purchase orders you requested whose delivery date has passed but for which no goods receipt is "
    "posted yet.",
)
one(
    "list_blocked_supplier_invoices",
    PROC,
    "Supplier invoices held by a price or quantity variance that purchasing has to resolve.",
    opt=["company_code", "vendor_id"],
)


# ============================================================================================
# human resources
# ============================================================================================

fam(
    "training_approval",
    HR,
    "{what} {detail}",
    [],
    ["approver_comment"],
    v(
        "approve_internal_training_request",
        what="Approves one employee request for an internal course run by the company academy.",
        detail="No budget is consumed; the seat is booked and the employee is notified.",
        add_req=["training_request_id"],
    ),
    v(
        "approve_external_training_request",
        what="Approves one employee request for an external training or conference.",
        detail="The fee is charged to the team's training budget on the cost center you give.",
        add_req=["training_request_id", "cost_center"],
    ),
    v(
        "approve_all_training_requests",
        what="Approves every training request, internal and external, waiting in your approval inbox.",
        detail="External fees are charged to each requester's default cost center.",
    ),
)
fam(
    "leave_request",
    HR,
    "Submits {kind} for the signed-in employee between two dates. {detail}",
    ["start_date", "end_date"],
    [],
    v(
        "submit_leave_request_vacation",
        kind="a paid vacation request",
        detail="Days are deducted from the annual leave balance once the manager approves.",
        add_opt=["half_day"],
    ),
    v(
        "submit_leave_request_sick",
        kind="a sick leave notice",
        detail="No approval step; payroll is informed and a medical certificate may be required from day three.",
        add_opt=["sick_note_attached"],
    ),
    v(
        "submit_leave_request_parental",
        kind="a parental leave request",
        detail="HR checks eligibility against the expected birth or adoption date before it is confirmed.",
        add_req=["expected_birth_date"],
    ),
    v(
        "submit_leave_request_unpaid",
        kind="an unpaid leave request",
        detail="Salary and benefit accrual pause for the period, so both the manager and HR approve it.",
        add_req=["justification"],
    ),
)
fam(
    "leave_balance",
    HR,
    "Shows {who} remaining vacation, carry-over and planned leave for the current year.",
    [],
    [],
    v("get_my_leave_balance", who="your own"),
    v("get_team_leave_balances", who="each of your direct reports'"),
)
fam(
    "employee_address",
    HR,
    "Updates the {kind} address of an employee. {detail}",
    ["employee_id", "street", "city", "postal_code"],
    [
        ("country_code", "Country of the address (ISO 3166-1 alpha-2); unchanged if omitted."),
        "effective_date",
    ],
    v(
        "update_employee_home_address",
        kind="home (residential)",
        detail="Payroll uses it for tax residency, so a change of country triggers a review by payroll.",
    ),
    v(
        "update_employee_mailing_address",
        kind="mailing",
        detail="Only letters and parcels go there; tax and payroll keep using the home address.",
    ),
)
fam(
    "job_requisition",
    HR,
    "Opens a job requisition to {why}. {detail}",
    ["position_title", "cost_center", "hiring_manager_id"],
    ["job_grade"],
    v(
        "open_job_requisition_backfill",
        why="replace someone who left",
        detail="The existing headcount is reused, so no extra budget approval is needed.",
        add_req=["replaced_employee_id"],
    ),
    v(
        "open_job_requisition_new_headcount",
        why="add a position that does not exist yet",
        detail="Finance has to approve the additional headcount before the job is posted.",
        add_req=["justification"],
    ),
    v(
        "open_job_requisition_internal_only",
        why="fill a position from inside the company",
        detail="The posting is visible only on the internal job board and is never advertised externally.",
    ),
)
fam(
    "transfer",
    HR,
    "Starts the transfer of an employee to a new cost center on a given date. {detail}",
    ["employee_id", "effective_date", "target_cost_center"],
    [],
    v(
        "initiate_employee_transfer_internal",
        detail="Same legal entity and country: the contract and payroll stay as they are.",
    ),
    v(
        "initiate_employee_transfer_cross_border",
        detail="The employee moves to another country, which creates a new contract, payroll registration "
        "and an immigration check.",
        add_req=["destination_country_code"],
    ),
)
fam(
    "payslip",
    HR,
    "Returns a PDF link to {which}. Only the employee and payroll can open it.",
    [],
    [],
    v("get_payslip_current", which="your latest payslip"),
    v("get_payslip_by_period", which="your payslip for the payroll period you name", add_req=["pay_period"]),
)
fam(
    "onboarding",
    HR,
    "Kicks off onboarding for a hired {who}: accounts, equipment and the first-day plan are requested "
    "automatically. {detail}",
    ["candidate_id", "start_date", "manager_id"],
    [],
    v("start_onboarding_employee", who="employee", detail="A permanent employee record is created."),
    v(
        "start_onboarding_contractor",
        who="contractor",
        detail="Access expires on the contract end date and no payroll record is created.",
        add_req=["contract_end_date"],
    ),
)
fam(
    "salary_change",
    HR,
    "Proposes a salary change for an employee as part of {cycle}. {detail}",
    ["employee_id", "new_annual_salary", "currency", "effective_date"],
    [],
    v(
        "propose_salary_adjustment_merit",
        cycle="the merit cycle",
        detail="It is checked against the merit budget of the manager's organisation.",
    ),
    v(
        "propose_salary_adjustment_promotion",
        cycle="a promotion",
        detail="The new job grade is recorded and the salary must fall inside that grade's band.",
        add_req=["job_grade"],
    ),
)
one(
    "get_employee_profile",
    HR,
    "Job, manager, location, grade and hire date of one employee.",
    ["employee_id"],
)
one("list_my_direct_reports", HR, "Everyone who reports directly to you, with job title and location.")
one(
    "record_performance_review",
    HR,
    "Saves the manager's year-end or mid-year review for an employee. The employee can see it once HR "
    "releases the cycle.",
    ["employee_id", "review_cycle", "performance_rating", "summary"],
)
one(
    "schedule_candidate_interview",
    HR,
    "Books an interview slot with a candidate and sends calendar invitations to the panel.",
    ["candidate_id", "interviewer_ids", "interview_start"],
)
one(
    "terminate_employment",
    HR,
    "Records the end of an employee's employment and starts offboarding: access removal, equipment return "
    "and final pay. Irreversible once payroll has run.",
    ["employee_id", "last_working_day", "termination_reason"],
)
one(
    "get_org_chart",
    HR,
    "Organisation chart below an employee, by default below you, down to the requested depth.",
    opt=["employee_id", "depth"],
)
one(
    "enroll_in_benefits_plan",
    HR,
    "Enrols an employee in a benefit plan during open enrolment or after a qualifying life event.",
    ["employee_id", "benefit_plan_code", "coverage_level"],
)
one(
    "update_emergency_contact",
    HR,
    "Adds or replaces the emergency contact on an employee record.",
    ["employee_id", "contact_name", "phone_number", "relationship"],
)
one(
    "get_open_positions_in_department",
    HR,
    "Open job requisitions with their status and days open; defaults to your own department.",
    opt=["department"],
)
one(
    "request_employment_verification_letter",
    HR,
    "Orders a signed letter confirming employment, job title and start date. Salary is only included "
    "for mortgage requests.",
    ["employee_id", "letter_purpose"],
)
one("get_public_holiday_calendar", HR, "Public holidays for your work location this year and next.")
one(
    "assign_mandatory_training",
    HR,
    "Assigns a learning course to a list of employees with a completion deadline; overdue reminders go "
    "to their managers.",
    ["employee_ids", "course_id", "due_date"],
)
one("list_pending_leave_approvals", HR, "Leave requests from your team that wait for your decision.")
one(
    "get_my_benefits_summary",
    HR,
    "Your current benefit elections, covered dependants and employer contributions.",
)
one(
    "list_upcoming_work_anniversaries",
    HR,
    "Work anniversaries in your organisation in the next 30 days, so you can recognise them.",
)
one("get_my_learning_plan", HR, "Courses assigned to you, their deadlines and your completion status.")


# ============================================================================================
# sales
# ============================================================================================

fam(
    "quote",
    SALES,
    "Creates a sales quote {kind} for a customer account that already exists. {detail} The quote is a draft until it is "
    "sent from the CRM.",
    ["customer_id", "line_items", "valid_until"],
    ["notes"],
    v(
        "create_sales_quote_standard",
        kind="at list prices",
        detail="Customer-specific price agreements still apply.",
    ),
    v(
        "create_sales_quote_discounted",
        kind="with a deal-specific discount",
        detail="Discounts above 15 percent route the quote to the sales director for approval.",
        add_req=["discount_percent"],
    ),
    v(
        "create_sales_quote_renewal",
        kind="that renews a running contract",
        detail="Items and prices are copied from the contract being renewed, then uplifted by the renewal index.",
        add_req=["contract_id"],
    ),
)
fam(
    "order_create",
    SALES,
    "Creates a sales order {how}. Credit and availability checks run immediately and may put the order "
    "on hold.",
    [],
    ["requested_delivery_date"],
    v(
        "create_sales_order_from_quote",
        how="by copying an accepted quote, with its prices and items",
        add_req=["quote_id"],
    ),
    v(
        "create_sales_order_direct",
        how="from scratch, without a preceding quote",
        add_req=["customer_id", "line_items", "requested_delivery_date"],
        drop=["requested_delivery_date"],
    ),
)
fam(
    "pipeline_summary",
    SALES,
    "Summarises the open pipeline {scope}: value by stage, weighted forecast and deals expected to close "
    "this quarter.",
    [],
    [],
    v("get_pipeline_summary_for_me", scope="you own"),
    v("get_pipeline_summary_for_team", scope="of your whole sales team"),
    v("get_pipeline_summary_by_region", scope="of one sales region", add_req=["sales_region"]),
)
fam(
    "opportunity_update",
    SALES,
    "{what} on an opportunity in the CRM. {detail}",
    ["opportunity_id"],
    ["notes"],
    v(
        "update_opportunity_stage",
        what="Moves the pipeline stage",
        detail="Closing as lost asks for a reason in the notes.",
        add_req=["opportunity_stage"],
    ),
    v(
        "update_opportunity_close_date",
        what="Changes the expected close date",
        detail="Pushing a deal into the next quarter removes it from this quarter's forecast.",
        add_req=["new_close_date"],
    ),
)
fam(
    "lead_create",
    SALES,
    "Registers a new lead that came in {source}. {detail}",
    ["company_name", "contact_email"],
    ["notes"],
    v(
        "create_lead_inbound",
        source="through the website or a call to sales",
        detail="It is routed to the territory owner by the prospect's country.",
    ),
    v(
        "create_lead_partner_referral",
        source="as a partner referral",
        detail="The referring partner is recorded so that a referral fee can be paid if the deal closes.",
        add_req=["partner_id"],
    ),
    v(
        "create_lead_event",
        source="from a trade show or field event",
        detail="The event code links the lead to the event's campaign for attribution.",
        add_req=["event_code"],
    ),
)
fam(
    "price_lookup",
    SALES,
    "{what} for a material and quantity. {detail}",
    ["material_id", "quantity"],
    ["currency"],
    v(
        "get_list_price",
        desc="Public list price of a material at a given quantity, straight from the current price list. No customer agreements, rebates or discounts are taken into account.",
        what="Public list price",
        detail="No customer agreements or discounts are applied.",
    ),
    v(
        "get_customer_specific_price",
        desc="What one particular customer would actually pay: their contract price, volume breaks and rebates applied to the requested quantity of a material.",
        what="Net price a specific customer would pay",
        detail="Contract prices, rebates and volume breaks for that customer are applied.",
        add_req=["customer_id"],
    ),
)
fam(
    "commission",
    SALES,
    "Commission statement {who} for a fiscal quarter: attainment, rate tier and payout. {detail}",
    [],
    ["fiscal_quarter"],
    v(
        "get_commission_statement_for_me",
        who="of the signed-in rep",
        detail="Defaults to the current quarter.",
    ),
    v(
        "get_commission_statement_for_rep",
        who="of one rep in your team",
        detail="Managers only; the rep is identified by employee id.",
        add_req=["employee_id"],
    ),
)
fam(
    "order_hold",
    SALES,
    "Puts a sales order on {kind} hold. {detail}",
    ["sales_order_id", "order_hold_reason"],
    [],
    v(
        "place_sales_order_credit_hold",
        kind="credit",
        detail="Nothing ships and no invoice is created until credit management releases it.",
    ),
    v(
        "place_sales_order_delivery_hold",
        kind="delivery",
        detail="Picking stops, but the order keeps its reserved stock and can still be invoiced for "
        "prepayment.",
    ),
)
fam(
    "rebate_agreement",
    SALES,
    "Creates a {kind} rebate agreement for a customer over a validity period. {detail}",
    ["customer_id", "valid_from", "valid_to", "rebate_percent"],
    [],
    v(
        "create_customer_rebate_agreement_volume",
        kind="volume",
        detail="The rebate is earned on all revenue once the period ends, regardless of growth.",
    ),
    v(
        "create_customer_rebate_agreement_growth",
        kind="growth",
        detail="It only pays out if revenue grows by the target percentage over the prior period.",
        add_req=["growth_target_percent"],
    ),
)
one(
    "convert_lead_to_opportunity",
    SALES,
    "Qualifies a lead and turns it into an opportunity with a first value and close date; the lead is "
    "closed as converted.",
    ["lead_id", "estimated_value", "currency", "expected_close_date"],
)
one(
    "log_sales_activity",
    SALES,
    "Logs a call, meeting, demo or visit against an opportunity so the account history stays complete.",
    ["opportunity_id", "activity_type", "activity_date"],
    ["notes"],
)
one(
    "get_account_360_overview",
    SALES,
    "One view of a customer account: open opportunities, orders, invoices, support cases and key contacts.",
    ["customer_id"],
)
one(
    "list_stalled_opportunities",
    SALES,
    "Your opportunities with no logged activity for a while (30 days by default).",
    opt=["days_without_activity"],
)
one(
    "submit_sales_forecast",
    SALES,
    "Submits your commit and best-case numbers for a quarter. Later submissions in the same quarter "
    "overwrite earlier ones.",
    ["fiscal_quarter", "committed_amount", "best_case_amount", "currency"],
)
one(
    "get_quota_attainment",
    SALES,
    "Your quota, bookings so far and attainment percentage.",
    opt=["fiscal_quarter"],
)
one(
    "reassign_account_owner",
    SALES,
    "Hands a customer account and its open opportunities to another rep.",
    ["customer_id", "new_owner_id"],
)
one(
    "get_order_fulfillment_status",
    SALES,
    "Delivery and billing status of each item of a sales order, with tracking links where shipped.",
    ["sales_order_id"],
)
one(
    "cancel_sales_order",
    SALES,
    "Cancels the open items of a sales order and releases reserved stock. Shipped items must be "
    "returned instead.",
    ["sales_order_id", "sales_cancellation_reason"],
)
one(
    "record_competitor_intel",
    SALES,
    "Notes which competitor is in a deal and anything learned about their offer.",
    ["opportunity_id", "competitor_name"],
    ["notes"],
)
one(
    "get_top_customers_by_revenue",
    SALES,
    "Largest customers by booked revenue.",
    opt=["limit", "fiscal_year"],
)
one("list_my_open_quotes", SALES, "Quotes you created that the customer has neither accepted nor rejected.")
one(
    "list_opportunities_closing_this_month",
    SALES,
    "Open opportunities with an expected close date in the current calendar month, across your team.",
)
one(
    "get_sales_leaderboard",
    SALES,
    "Ranking of reps by bookings in the current quarter.",
    opt=["sales_region"],
)
one("list_my_accounts", SALES, "Customer accounts you own, with revenue this year and last activity date.")


# ============================================================================================
# supply chain
# ============================================================================================

fam(
    "shipment_tracking",
    SCM,
    "Tracks {what}. {detail}",
    [],
    [],
    v(
        "track_shipment_parcel",
        what="a parcel shipment by carrier tracking number",
        detail="Returns the carrier's scan events and the promised delivery date.",
        add_req=["tracking_number"],
    ),
    v(
        "track_shipment_ocean_freight",
        what="an ocean container",
        detail="Returns vessel, port of loading and discharge, ETA and the latest milestone.",
        add_req=["container_number"],
    ),
    v(
        "track_shipment_air_freight",
        what="an air freight consignment by air waybill",
        detail="Returns flight segments, customs status at destination and ETA.",
        add_req=["air_waybill"],
    ),
    v(
        "track_shipment_road_freight",
        what="a road freight consignment by its CMR note number",
        detail="Returns the truck's last GPS position, the remaining stops and ETA.",
        add_req=["cmr_number"],
    ),
)
fam(
    "stock_transfer",
    SCM,
    "Moves stock of a material {scope}. {detail}",
    ["material_id", "quantity", "source_plant_id"],
    ["batch_id"],
    v(
        "create_stock_transfer_intra_plant",
        scope="between two storage locations of the same plant",
        detail="It is a single stock posting with no delivery or transport.",
        add_req=["from_storage_location", "to_storage_location"],
    ),
    v(
        "create_stock_transfer_inter_plant",
        scope="from one plant to another plant of the same company",
        detail="A stock transport order with an outbound delivery is created; stock is in transit until received.",
        add_req=["receiving_plant_id"],
    ),
    v(
        "create_stock_transfer_cross_company",
        scope="to a plant that belongs to another company code",
        detail="An intercompany order is created, with billing between the two legal entities.",
        add_req=["receiving_plant_id", "receiving_company_code"],
    ),
)
fam(
    "inventory_level",
    SCM,
    "Current unrestricted, quality-inspection and blocked stock of a material {scope}.",
    ["material_id"],
    [],
    v("get_inventory_level_by_plant", scope="in one plant", add_req=["plant_id"]),
    v(
        "get_inventory_level_by_warehouse",
        scope="in one warehouse, down to storage bin",
        add_req=["warehouse_id"],
    ),
    v("get_inventory_level_global", scope="summed over all plants worldwide, with a per-plant breakdown"),
)
fam(
    "delivery_create",
    SCM,
    "Creates {kind} delivery for {ref}. {detail}",
    [],
    [],
    v(
        "create_outbound_delivery",
        kind="an outbound",
        ref="a sales order that is due for shipping",
        detail="The warehouse then gets a picking task.",
        add_req=["sales_order_id"],
        add_opt=["warehouse_id"],
    ),
    v(
        "create_inbound_delivery",
        kind="an inbound",
        ref="a purchase order from an advance shipping notice",
        detail="Goods receipt can then be posted against the delivery at the dock.",
        add_req=["purchase_order_id", "delivery_date"],
    ),
)
fam(
    "stock_parameters",
    SCM,
    "Sets the {what} of a material in one plant. {detail}",
    ["material_id", "plant_id", "new_quantity"],
    [],
    v(
        "update_safety_stock_level",
        what="safety stock",
        detail="Planning keeps this buffer untouched for normal demand.",
    ),
    v(
        "update_reorder_point",
        what="reorder point",
        detail="When stock falls to this level, MRP proposes a replenishment.",
    ),
)
fam(
    "carrier_booking",
    SCM,
    "Books {mode} with a contracted carrier for a pickup date. {detail}",
    ["origin_postal_code", "destination_postal_code", "pickup_date"],
    [("weight_kg", "Estimated gross weight in kilograms; improves the rate quote.")],
    v(
        "book_carrier_ftl",
        mode="a full truckload",
        detail="You get a dedicated truck, so the number of pallets does not change the price.",
    ),
    v(
        "book_carrier_ltl",
        mode="less-than-truckload space",
        detail="Price depends on pallets and weight; transit takes longer than a full truck.",
        add_req=["pallet_count"],
    ),
    v(
        "book_carrier_parcel_pickup",
        mode="a parcel pickup",
        detail="It is meant for boxes of up to 31.5 kg each.",
        add_req=["parcel_count"],
    ),
)
fam(
    "demand_forecast",
    SCM,
    "Weekly demand forecast for a material over the horizon you ask for, {kind}.",
    ["material_id", "horizon_weeks"],
    ["plant_id"],
    v("get_demand_forecast_statistical", kind="straight from the statistical model, before any overrides"),
    v(
        "get_demand_forecast_consensus",
        kind="as agreed in the S&OP consensus meeting, including sales and marketing overrides",
    ),
)
fam(
    "stockout_risk",
    SCM,
    "Materials projected to run out of stock within two weeks {scope}, with days of cover.",
    [],
    [],
    v("list_stockout_risks_for_my_plants", scope="in the plants you plan"),
    v("list_stockout_risks_all_plants", scope="anywhere in the network"),
)
fam(
    "customs_declaration",
    SCM,
    "Files {kind} customs declaration for a shipment with the national customs system. {detail}",
    ["shipment_id", "hs_codes", "declared_value", "country_code"],
    [("currency", "Currency of the declared value; defaults to the commercial invoice currency.")],
    v(
        "file_customs_export_declaration",
        kind="an export",
        detail="The country is where the goods leave; the export accompanying document is returned.",
    ),
    v(
        "file_customs_import_declaration",
        kind="an import",
        detail="The country is where the goods enter; duties and import VAT are calculated.",
    ),
)
fam(
    "dock_appointment",
    SCM,
    "Reserves a dock door time slot at a warehouse for {what}.",
    ["warehouse_id", "appointment_start", "carrier_scac"],
    [],
    v("schedule_dock_appointment_inbound", what="a carrier delivering goods to us"),
    v("schedule_dock_appointment_outbound", what="a carrier collecting outbound shipments"),
)
one(
    "run_mrp_for_material",
    SCM,
    "Runs material requirements planning for one material in one plant right now.",
    ["material_id", "plant_id"],
)
one(
    "get_atp_quantity",
    SCM,
    "Available-to-promise quantity of a material in a plant on a requested date, after existing "
    "orders are served.",
    ["material_id", "plant_id", "requested_date"],
)
one(
    "create_cycle_count",
    SCM,
    "Creates a physical inventory count document for selected storage bins in a warehouse.",
    ["warehouse_id", "storage_bin_ids"],
)
one(
    "post_inventory_adjustment",
    SCM,
    "Corrects book stock in a warehouse after a count difference, damage or expiry. Adjustments above "
    "the tolerance need supervisor approval.",
    ["material_id", "warehouse_id", "quantity_delta", "adjustment_reason"],
)
one("list_late_inbound_deliveries", SCM, "Inbound deliveries whose expected arrival date has passed.")
one(
    "get_supplier_lead_time",
    SCM,
    "Planned and actual average lead time of a supplier for one material.",
    ["vendor_id", "material_id"],
)
one(
    "get_warehouse_capacity_utilization",
    SCM,
    "How full each warehouse is, by storage type; pass a warehouse id to see one.",
    opt=["warehouse_id"],
)
one(
    "get_shipment_cost_estimate",
    SCM,
    "Estimates freight cost between two postal codes from the contracted carrier rates.",
    ["origin_postal_code", "destination_postal_code", "weight_kg", "service_level"],
)
one(
    "list_open_stock_transfers",
    SCM,
    "Stock transfers still in transit or not yet received.",
    opt=["plant_id"],
)
one(
    "list_delayed_shipments",
    SCM,
    "Outbound shipments that will miss the promised delivery date.",
    opt=["carrier_scac"],
)
one("get_fill_rate_report", SCM, "Order line fill rate and on-time-in-full rate for last week.")
one(
    "list_materials_below_safety_stock",
    SCM,
    "Materials in one plant whose unrestricted stock is currently under their safety stock.",
    ["plant_id"],
)
one(
    "list_pending_customs_holds",
    SCM,
    "Shipments currently held by customs and what the authority is asking for.",
)


# ============================================================================================
# customer service
# ============================================================================================

fam(
    "refund",
    CS,
    "Refunds all or part of a customer order that was {channel}. {detail}",
    ["order_id", "refund_amount", "refund_reason"],
    [("currency", "Currency of the refund; defaults to the order currency."), "notes"],
    v(
        "refund_order_online",
        channel="paid in the web shop or app",
        detail="Money goes back to the original payment method within five business days.",
    ),
    v(
        "refund_order_in_store",
        channel="bought or returned in a physical store",
        detail="The store named here pays out at the till, in cash or to the card used.",
        add_req=["store_id"],
    ),
    v(
        "refund_order_marketplace",
        channel="placed through a third-party marketplace",
        detail="The refund is pushed to the marketplace, which pays the customer under its own rules.",
        add_req=["marketplace"],
    ),
)
fam(
    "case_create",
    CS,
    "Logs a new support case that came in by {channel}. {detail}",
    ["customer_id", "subject", "priority"],
    ["product_area"],
    v(
        "create_support_case_email",
        channel="email",
        detail="Replies to the case are sent from the shared support mailbox.",
    ),
    v(
        "create_support_case_phone",
        channel="phone",
        detail="A callback number is stored so the agent who picks it up can call back.",
        add_req=["callback_number"],
    ),
    v(
        "create_support_case_chat",
        channel="live chat",
        detail="The chat transcript is attached automatically.",
    ),
    v(
        "create_support_case_social_media",
        channel="a public social media message",
        detail="The customer's handle is stored and the first reply moves the conversation to private messages.",
        add_req=["social_handle"],
    ),
    v(
        "create_support_case_web_form",
        channel="the contact form on the website",
        detail="Files uploaded with the form are copied to the case.",
    ),
)
fam(
    "case_escalate",
    CS,
    "Escalates a support case to {target}. {detail}",
    ["case_id", "escalation_reason"],
    [],
    v(
        "escalate_case_to_tier2",
        target="second-level support",
        detail="The case keeps its SLA clock and moves to the tier-2 queue.",
    ),
    v(
        "escalate_case_to_engineering",
        target="the product engineering team as a suspected defect",
        detail="A linked bug ticket is created in the engineering backlog for the area you name.",
        add_req=["product_area"],
    ),
)
fam(
    "case_lists",
    CS,
    "{what}, newest first, with priority and time left until the SLA is breached.",
    [],
    [],
    v("list_my_open_cases", what="Open cases assigned to you"),
    v(
        "list_unassigned_cases_in_queue",
        what="Cases nobody has picked up yet in a support queue",
        add_opt=["support_queue"],
    ),
    v(
        "list_cases_breaching_sla",
        what="Cases in any queue that will breach their SLA within the next four hours",
    ),
)
fam(
    "replacement",
    CS,
    "Sends the customer a free replacement for an item of their order {speed}. {detail}",
    ["order_id", "sku", "quantity"],
    [],
    v(
        "ship_replacement_item_standard",
        speed="by standard shipping",
        detail="No return of the faulty item is required.",
    ),
    v(
        "ship_replacement_item_expedited",
        speed="by express or next-day shipping",
        detail="The faster shipping is charged to the service budget and needs a reason.",
        add_req=["shipping_method"],
        add_opt=[("escalation_reason", "Why the faster shipping is justified.")],
    ),
)
fam(
    "rma",
    CS,
    "Creates a return merchandise authorisation {kind}. {detail}",
    ["order_id", "sku", "rma_reason"],
    [],
    v(
        "create_return_authorization_product",
        kind="for a product returned within the return window",
        detail="A prepaid label is emailed to the customer.",
    ),
    v(
        "create_return_authorization_warranty",
        kind="for a warranty repair",
        detail="The serial number is checked against the warranty register before the label is issued.",
        add_req=["serial_number"],
    ),
)
fam(
    "goodwill",
    CS,
    "Gives a customer a goodwill gesture {form}. {detail}",
    ["customer_id", "credit_amount", "currency"],
    ["notes"],
    v(
        "issue_goodwill_credit_account",
        form="as a credit on their customer account",
        detail="It is offset against their next invoice.",
    ),
    v(
        "issue_goodwill_voucher",
        form="as a voucher code",
        detail="The code is emailed to the customer and expires on the date given.",
        add_req=["voucher_expiry"],
    ),
)
fam(
    "case_close",
    CS,
    "Closes a support case {how}. {detail}",
    ["case_id"],
    [],
    v(
        "close_case_resolved",
        desc="Marks a support case as resolved and emails the customer the resolution summary together with a satisfaction survey.",
        how="as resolved",
        detail="The resolution summary is sent to the customer with a satisfaction survey.",
        add_req=["resolution_summary"],
    ),
    v(
        "close_case_duplicate",
        desc="Shuts a case that repeats an existing one and links it to the surviving case; the customer gets no survey.",
        how="as a duplicate of another case",
        detail="No survey is sent and the customer is pointed to the surviving case.",
        add_req=["duplicate_of_case_id"],
    ),
)
fam(
    "loyalty_adjust",
    CS,
    "{verb} loyalty points {direction} a member's balance. {detail}",
    ["loyalty_member_id", "points", "points_reason"],
    [],
    v(
        "adjust_loyalty_points_credit",
        verb="Adds",
        direction="to",
        detail="Typical for service recovery or a missing purchase.",
    ),
    v(
        "adjust_loyalty_points_debit",
        verb="Removes",
        direction="from",
        detail="Used to correct points earned by mistake or fraud.",
    ),
)
fam(
    "subscription_cancel",
    CS,
    "Cancels a customer subscription {when}. {detail}",
    ["subscription_id", "subscription_cancel_reason"],
    [],
    v(
        "cancel_customer_subscription_immediately",
        when="with immediate effect",
        detail="Service stops today and the unused part of the term is refunded pro rata.",
    ),
    v(
        "cancel_customer_subscription_at_term_end",
        when="at the end of the current term",
        detail="Service continues until then and nothing is refunded.",
    ),
)
one(
    "get_customer_contact_history",
    CS,
    "Every interaction with a customer across channels, newest first.",
    ["customer_id"],
    ["limit"],
)
one(
    "send_customer_satisfaction_survey",
    CS,
    "Sends the CSAT survey for a case again, e.g. if the first email bounced.",
    ["case_id"],
)
one(
    "update_customer_contact_details",
    CS,
    "Changes the email address or phone number on a customer record after verifying the customer.",
    ["customer_id"],
    ["email", "phone_number"],
)
one(
    "get_order_details_for_customer",
    CS,
    "Items, payment, delivery address and shipping status of a customer order.",
    ["order_id"],
)
one(
    "merge_duplicate_customer_records",
    CS,
    "Merges two customer records that belong to the same person. Orders and cases move to the surviving "
    "record; the other one is deactivated. This cannot be undone.",
    ["primary_customer_id", "duplicate_customer_id"],
)
one(
    "search_knowledge_base",
    CS,
    "Full-text search over published help articles and agent-only solutions.",
    ["search_query"],
)
one(
    "get_sla_policy_for_customer",
    CS,
    "Response and resolution targets that apply to a customer's contract.",
    ["customer_id"],
)
one(
    "get_queue_statistics",
    CS,
    "Live numbers for every support queue: waiting cases, agents online, average handling time.",
)
one(
    "schedule_customer_callback",
    CS,
    "Books a callback for a case at a time the customer chose; the slot is assigned to the next free agent.",
    ["case_id", "callback_at", "callback_number"],
)
one(
    "check_warranty_status",
    CS,
    "Whether a device is still under warranty, and until when.",
    ["serial_number"],
)
one(
    "add_internal_note_to_case",
    CS,
    "Adds a note that only agents can see to a case.",
    ["case_id", "note_text"],
)
one("get_my_case_metrics", CS, "Your handled cases, CSAT and first-contact resolution this week.")
one("list_pending_refund_approvals", CS, "Refunds above your approval limit raised by agents you supervise.")
one("list_open_escalations", CS, "Cases currently escalated to tier 2 or engineering, with their owners.")
one("get_knowledge_base_top_articles", CS, "Help articles most viewed by customers in the last seven days.")


# ============================================================================================
# IT service management
# ============================================================================================

fam(
    "password_reset",
    ITSM,
    "Resets the password of {account}. {detail} A temporary password is sent to the user's registered "
    "mobile number.",
    ["username"],
    [],
    v(
        "reset_password_sso",
        account="a user's corporate single sign-on account",
        detail="All applications behind SSO pick up the new password; active sessions are signed out.",
    ),
    v(
        "reset_password_local_account",
        account="a local account on one server or workstation",
        detail="Only that machine is affected; SSO is unchanged.",
        add_req=["hostname"],
    ),
    v(
        "reset_password_sap_account",
        account="a user's account in one SAP client",
        detail="Use it when the SAP login is not connected to SSO.",
        add_req=["sap_client"],
    ),
    v(
        "reset_password_service_account",
        desc="Rotates the password of a non-personal service account that an application or batch job "
        "signs in with. The new secret goes to the password vault only; the owning team restarts the "
        "jobs that use it.",
        add_req=["service_account"],
        drop=["username"],
    ),
)
fam(
    "incident_create",
    ITSM,
    "Opens an incident for a {kind} problem. {detail}",
    ["short_description", "impact", "urgency"],
    [],
    v(
        "create_incident_hardware",
        kind="hardware",
        detail="The device is identified by its asset tag and the ticket goes to workplace support.",
        add_req=["asset_tag"],
    ),
    v(
        "create_incident_software",
        kind="business application or software",
        detail="It is routed to the application's support group.",
        add_req=["application_name"],
    ),
    v(
        "create_incident_network",
        kind="network or connectivity",
        detail="Give the site and floor so network operations can correlate it with other reports.",
        add_req=["site_location"],
    ),
)
fam(
    "incident_lists",
    ITSM,
    "Open incidents {scope}, sorted by priority.",
    [],
    [],
    v("list_open_incidents_for_me", scope="assigned to you personally"),
    v("list_open_incidents_for_my_group", scope="assigned to any of your resolver groups"),
    v("list_unassigned_incidents", scope="that no one has picked up yet", add_opt=["assignment_group"]),
)
fam(
    "change_request",
    ITSM,
    "Submits {kind} change request for a configuration item. {detail}",
    ["ci_id", "planned_start", "planned_end", "change_description"],
    [],
    v(
        "submit_change_request_standard",
        kind="a standard",
        detail="Standard changes follow a pre-approved template and are scheduled without a CAB review.",
        add_req=["change_template_id"],
    ),
    v(
        "submit_change_request_normal",
        kind="a normal",
        detail="It is reviewed at the next change advisory board meeting.",
    ),
    v(
        "submit_change_request_emergency",
        kind="an emergency",
        detail="The emergency CAB approves it within hours; a justification and post-implementation review are required.",
        add_req=["justification"],
    ),
)
fam(
    "access_request",
    ITSM,
    "Requests {what} for a user. {detail}",
    ["username", "business_justification"],
    [],
    v(
        "request_application_access",
        what="a role in a business application",
        detail="The application owner approves it.",
        add_req=["application_name"],
        add_opt=["access_level"],
    ),
    v(
        "request_shared_drive_access",
        what="access to a network file share",
        detail="The share owner approves; read-only is the default.",
        add_req=["share_path"],
        add_opt=["access_level"],
    ),
    v(
        "request_vpn_access",
        what="remote VPN access",
        detail="The line manager approves and the VPN profile is pushed to the user's laptop.",
    ),
)
fam(
    "mfa_device",
    ITSM,
    "{what} {detail}",
    ["username"],
    [],
    v(
        "reset_mfa_device",
        what="Removes a user's registered second-factor device, for example after a phone was lost.",
        detail="The user must enrol a new device at next sign-in.",
    ),
    v(
        "enroll_mfa_device",
        what="Registers a new second-factor device for a user.",
        detail="An activation code is sent to the user's registered email address.",
        add_req=["mfa_device_type"],
    ),
)
fam(
    "laptop_request",
    ITSM,
    "Orders a {kind} laptop for an employee, charged to a cost center. {detail}",
    ["employee_id", "cost_center"],
    [],
    v(
        "request_laptop_standard",
        kind="standard office",
        detail="It comes with Windows 11 and the office bundle and arrives within five working days.",
    ),
    v(
        "request_laptop_developer",
        kind="high-spec developer",
        detail="Choose the operating system; local admin rights are granted after security training.",
        add_req=["operating_system"],
    ),
)
fam(
    "account_unlock",
    ITSM,
    "Unlocks a user account that was locked after too many failed logins {where}.",
    ["username"],
    [],
    v("unlock_user_account_ad", where="in Active Directory (Windows sign-in, email, file shares)"),
    v("unlock_user_account_sap", where="in one SAP client", add_req=["sap_client"]),
)
fam(
    "mailbox",
    ITSM,
    "Creates {what} in the corporate email system. {detail}",
    ["display_name", "owner_email"],
    [],
    v(
        "create_shared_mailbox",
        what="a shared mailbox",
        detail="Members can send as the mailbox and see the same inbox.",
    ),
    v(
        "create_distribution_list",
        what="a distribution list",
        detail="Mail to the list is forwarded to every member's own inbox; there is no shared inbox.",
    ),
)
fam(
    "software_install",
    ITSM,
    "Requests installation of {what} on a managed device. {detail}",
    ["software_name", "asset_tag"],
    [],
    v(
        "request_software_install_licensed",
        what="commercial software that needs a paid licence",
        detail="A licence is purchased and charged to the cost center given.",
        add_req=["license_cost_center"],
    ),
    v(
        "request_software_install_free",
        what="free or already-licensed software from the company app catalogue",
        detail="It is pushed to the device without an approval step.",
    ),
)
one(
    "get_incident_details",
    ITSM,
    "Full record of an incident: caller, assignment, work notes and SLA status.",
    ["incident_id"],
)
one(
    "add_work_note_to_incident",
    ITSM,
    "Appends an internal work note to an incident.",
    ["incident_id", "work_note"],
)
one(
    "resolve_incident",
    ITSM,
    "Sets an incident to resolved with a resolution code; the caller has three days to reopen it before "
    "it closes.",
    ["incident_id", "resolution_code", "resolution_notes"],
)
one(
    "get_change_calendar",
    ITSM,
    "Scheduled changes and freeze periods in a date range; the next 14 days by default.",
    opt=[("start_date", "First day of the range."), ("end_date", "Last day of the range.")],
)
one(
    "create_problem_record",
    ITSM,
    "Opens a problem record to find the root cause behind one or more incidents.",
    ["problem_title", "related_incident_ids"],
)
one("get_configuration_item", ITSM, "CMDB record of a configuration item with its relationships.", ["ci_id"])
one("list_my_assigned_assets", ITSM, "Devices and peripherals registered to you in the asset inventory.")
one(
    "check_service_status",
    ITSM,
    "Health of business IT services and any ongoing outages.",
    opt=["service_name"],
)
one(
    "reassign_incident",
    ITSM,
    "Moves an incident to another resolver group and clears the individual assignee.",
    ["incident_id", "assignment_group"],
    ["work_note"],
)
one("list_change_requests_awaiting_my_approval", ITSM, "Change requests where you are a pending approver.")
one("list_active_major_incidents", ITSM, "Major incidents in progress with their bridge call details.")
one(
    "get_my_software_entitlements",
    ITSM,
    "Software licences assigned to you and the devices they are used on.",
)
one(
    "list_expiring_ssl_certificates",
    ITSM,
    "TLS certificates in the certificate inventory that expire soon (30 days by default).",
    opt=["days_ahead"],
)


# ============================================================================================
# manufacturing
# ============================================================================================

fam(
    "maintenance_order",
    MFG,
    "Schedules {kind} maintenance on a piece of equipment for a planned date. {detail}",
    ["equipment_id", "planned_date"],
    ["notes"],
    v(
        "schedule_maintenance_preventive",
        kind="preventive",
        detail="The work repeats at a fixed interval whether or not anything is wrong.",
        add_req=["interval_days"],
    ),
    v(
        "schedule_maintenance_corrective",
        kind="corrective",
        detail="It repairs a failure that already happened; describe what broke.",
        add_req=["failure_description"],
    ),
    v(
        "schedule_maintenance_predictive",
        kind="predictive",
        detail="It is triggered by a condition-monitoring alert before the equipment fails.",
        add_req=["sensor_alert_id"],
    ),
    v(
        "schedule_maintenance_shutdown",
        kind="shutdown",
        detail="The job is bundled into a planned plant shutdown (turnaround), when the whole line is stopped anyway.",
        add_req=["shutdown_id"],
    ),
)
fam(
    "production_order",
    MFG,
    "Creates a production order to make a material in a plant by a finish date, {kind}. {detail}",
    ["material_id", "plant_id", "quantity", "finish_date"],
    [],
    v(
        "create_production_order_make_to_stock",
        kind="producing for stock",
        detail="The output goes to unrestricted stock.",
    ),
    v(
        "create_production_order_make_to_order",
        kind="producing for a specific sales order",
        detail="The output is reserved for that order and costs roll up to it.",
        add_req=["sales_order_id"],
    ),
    v(
        "create_production_order_rework",
        kind="as rework of a defective batch",
        detail="Components come from the batch being reworked instead of fresh material.",
        add_req=["batch_id"],
    ),
)
fam(
    "operation_confirm",
    MFG,
    "Confirms an operation of a production order with the good quantity produced, {kind}.",
    ["production_order_id", "operation_number", "yield_quantity"],
    ["scrap_quantity"],
    v("confirm_production_operation_partial", kind="keeping the operation open for more quantity"),
    v(
        "confirm_production_operation_final",
        kind="as the final confirmation that closes the operation; reservations for its components are released",
    ),
)
fam(
    "quality_inspection",
    MFG,
    "Records the result of {stage} inspection against an inspection lot. {detail}",
    ["inspection_lot_id", "inspection_result"],
    ["defect_count", "notes"],
    v(
        "record_quality_inspection_incoming",
        stage="an incoming goods",
        detail="Rejected lots are blocked and a supplier complaint is proposed.",
    ),
    v(
        "record_quality_inspection_in_process",
        stage="an in-process",
        detail="A rejection stops the next operation until the lot is reviewed.",
    ),
    v(
        "record_quality_inspection_final",
        stage="a final product",
        detail="Accepting the lot releases the finished batch for sale.",
    ),
)
fam(
    "batch_hold",
    MFG,
    "{what} {detail}",
    ["batch_id", "material_id"],
    [],
    v(
        "block_batch_quality_hold",
        what="Puts a batch on quality hold so it cannot be shipped or consumed.",
        detail="Stock moves to blocked status in every location.",
        add_req=["quality_hold_reason"],
    ),
    v(
        "release_batch_quality_hold",
        what="Releases a batch from quality hold back to unrestricted stock.",
        detail="Only quality assurance users can release.",
    ),
)
fam(
    "downtime_log",
    MFG,
    "Logs {kind} downtime of a machine between two timestamps. {detail}",
    ["equipment_id", "start_time", "end_time"],
    ["notes"],
    v(
        "log_machine_downtime_planned",
        kind="planned",
        detail="Planned stops (changeovers, cleaning, maintenance) count against availability but not as failures.",
    ),
    v(
        "log_machine_downtime_unplanned",
        kind="unplanned",
        detail="A failure code is required and the stop feeds MTBF reporting.",
        add_req=["failure_code"],
    ),
)
fam(
    "oee",
    MFG,
    "Overall equipment effectiveness {scope} between two dates, split into availability, performance and quality.",
    [("start_date", "First day of the range."), ("end_date", "Last day of the range.")],
    [],
    v("get_oee_for_line", scope="of one production line", add_req=["line_id"]),
    v("get_oee_for_plant", scope="of a whole plant, averaged over its lines", add_req=["plant_id"]),
)
fam(
    "work_order_lists",
    MFG,
    "Maintenance work orders {scope}, ordered by due date.",
    [],
    [],
    v(
        "list_my_open_work_orders",
        desc="Maintenance jobs assigned to you that you have not finished yet.",
        scope="assigned to you that are not yet completed",
    ),
    v(
        "list_overdue_work_orders",
        desc="Every maintenance work order in your plant whose due date has passed, no matter who it is assigned to.",
        scope="in your plant that are past their due date",
    ),
)
fam(
    "engineering_change",
    MFG,
    "{what} for a material. {detail}",
    ["material_id", "change_description", "change_reason"],
    [],
    v(
        "create_engineering_change_request",
        what="Proposes a design or bill-of-materials change",
        detail="Engineering evaluates it; nothing changes in production yet.",
    ),
    v(
        "create_engineering_change_order",
        what="Issues an approved change",
        detail="BOM and routing changes take effect on the valid-from date.",
        add_req=["effective_date"],
    ),
)
one(
    "get_bill_of_materials",
    MFG,
    "Multi-level bill of materials of a material in a plant, with quantities per unit.",
    ["material_id", "plant_id"],
)
one(
    "get_routing_for_material",
    MFG,
    "Operations, work centers and standard times to produce a material in a plant.",
    ["material_id", "plant_id"],
)
one(
    "report_scrap",
    MFG,
    "Reports scrapped quantity on a production order with a cause; scrap value is posted to the order.",
    ["production_order_id", "scrap_quantity", "scrap_reason"],
)
one(
    "create_nonconformance_report",
    MFG,
    "Opens a nonconformance report when a product or process does not meet specification, assigning it "
    "to quality engineering.",
    ["material_id", "failure_description", "severity"],
    ["batch_id"],
)
one(
    "get_production_schedule",
    MFG,
    "Sequenced production orders by line in one plant for a day.",
    ["plant_id"],
    [("start_date", "Day to show; today by default.")],
)
one(
    "request_spare_part",
    MFG,
    "Reserves a spare part from the maintenance store for a machine.",
    ["equipment_id", ("material_id", "Material number of the spare part."), "quantity"],
)
one(
    "get_equipment_maintenance_history",
    MFG,
    "Past maintenance orders and failures of a machine.",
    ["equipment_id"],
)
one("get_shift_handover_notes", MFG, "Notes left by the previous shift for a line.", ["line_id"])
one(
    "schedule_instrument_calibration",
    MFG,
    "Plans the calibration of a measuring instrument before its due date.",
    ["instrument_id", "due_date"],
)
one(
    "get_work_center_capacity_load",
    MFG,
    "Capacity load of a work center per day in a date range, as hours required against hours available.",
    ["work_center_id", ("start_date", "First day."), ("end_date", "Last day.")],
)
one(
    "report_safety_near_miss",
    MFG,
    "Reports a safety near miss on the shop floor to EHS. Reports can be made without giving a name.",
    ["site_location", "failure_description", "occurred_at"],
)
one(
    "list_lines_currently_down",
    MFG,
    "Production lines that are stopped right now, with the reason and since when.",
)
one(
    "get_daily_production_summary",
    MFG,
    "Output against plan, scrap and downtime for one day.",
    opt=["plant_id", ("start_date", "Day; yesterday by default.")],
)
one("list_pending_quality_inspections", MFG, "Inspection lots waiting for a result.", opt=["plant_id"])
one("list_batches_on_quality_hold", MFG, "Batches currently blocked by quality, with hold reason and age.")
one(
    "get_spare_parts_below_minimum",
    MFG,
    "Spare parts whose stock in the maintenance store is below the minimum level.",
)


# ============================================================================================
# facilities and real estate
# ============================================================================================

fam(
    "space_booking",
    FAC,
    "Reserves {what} in a building for a time window. {detail}",
    ["building_id", "start_time", "end_time"],
    [],
    v(
        "book_meeting_room",
        what="a meeting room",
        detail="The smallest free room that fits the attendees is picked and a calendar invite is sent.",
        add_req=["attendees"],
    ),
    v(
        "book_hot_desk",
        what="a single desk for yourself",
        detail="You can name a floor; otherwise any free desk is assigned.",
        add_opt=["floor"],
    ),
    v(
        "book_event_space",
        what="an auditorium or event area",
        detail="Facilities confirms large events manually, and catering can be added.",
        add_req=["attendees"],
        add_opt=["catering"],
    ),
)
fam(
    "facilities_request",
    FAC,
    "Raises a facilities service request for {what}. {detail}",
    ["building_id", "location_detail", "request_description"],
    ["priority"],
    v(
        "submit_facilities_request_cleaning",
        what="extra or special cleaning",
        detail="Routine cleaning is already scheduled; use this for spills or after events.",
    ),
    v(
        "submit_facilities_request_repair",
        what="a repair to the building or furniture",
        detail="Broken doors, lights, blinds and chairs belong here.",
    ),
    v(
        "submit_facilities_request_hvac",
        what="heating, ventilation or air conditioning",
        detail="Use it when a room is too hot, too cold or stuffy; the building management team picks it up.",
    ),
)
fam(
    "visitor_registration",
    FAC,
    "Registers {kind} so reception can print a badge and notify the host on arrival.",
    ["visitor_name", "visitor_email", "host_employee_id", "visit_date"],
    [],
    v("register_visitor_single_day", kind="an external visitor for one day"),
    v(
        "register_visitor_recurring",
        desc="Registers a regular visitor, such as a contractor, with a pass that stays valid until a set date; "
        "reception prints the badge once and notifies the host at each arrival.",
        kind="a visitor who comes regularly, such as a contractor, with a pass valid until a set date",
        add_req=["valid_until"],
    ),
)
fam(
    "lease_info",
    FAC,
    "{what} {detail}",
    ["lease_id"],
    [],
    v(
        "get_lease_details",
        what="Key terms of a property lease: rent, indexation, area, landlord and end date.",
        detail="Figures come from the lease administration system.",
    ),
    v(
        "get_lease_renewal_options",
        what="Renewal and break options of a property lease with their notice deadlines.",
        detail="Use it before deciding whether to extend or exit.",
    ),
)
fam(
    "parking_permit",
    FAC,
    "Requests a parking permit at a building for {who}. {detail}",
    ["building_id", "license_plate"],
    [],
    v(
        "request_parking_permit_employee",
        who="an employee's own car",
        detail="Permits are allocated monthly and may be waitlisted.",
    ),
    v(
        "request_parking_permit_visitor",
        who="a visitor's car on one day",
        detail="The plate is added to the barrier list for that date only.",
        add_req=["visit_date"],
    ),
)
fam(
    "access_badge",
    FAC,
    "Requests {what} for an employee at a building. {detail}",
    ["employee_id", "building_id"],
    [],
    v(
        "request_access_badge_new",
        what="a first access badge",
        detail="Access follows the employee's department profile.",
    ),
    v(
        "request_access_badge_replacement",
        what="a replacement access badge",
        detail="The old badge is deactivated immediately.",
        add_req=["badge_loss_reason"],
    ),
)
fam(
    "my_bookings",
    FAC,
    "Your upcoming {what} reservations, with building and time.",
    [],
    [],
    v("list_my_room_bookings", what="meeting room"),
    v("list_my_desk_bookings", what="desk"),
)
fam(
    "occupancy",
    FAC,
    "Badge-based occupancy on a given day {scope}, as people in the building against capacity.",
    ["building_id", ("start_date", "Day to report on.")],
    [],
    v("get_occupancy_by_building", scope="for a whole building, hour by hour"),
    v("get_occupancy_by_floor", scope="for one floor of a building", add_req=["floor"]),
)
fam(
    "courier_pickup",
    FAC,
    "Orders a courier to collect packages from the mailroom for {where} delivery. {detail}",
    ["pickup_location", "package_count", "pickup_date"],
    [],
    v(
        "request_courier_pickup_domestic",
        where="domestic",
        detail="Parcels arrive the next working day anywhere in the country.",
    ),
    v(
        "request_courier_pickup_international",
        where="international",
        detail="Customs paperwork is prepared from the destination and declared value.",
        add_req=["destination_country_code", "declared_value"],
        add_opt=[("currency", "Currency of the declared value; defaults to EUR.")],
    ),
)
one("cancel_room_booking", FAC, "Cancels a room or desk booking and frees the space.", ["booking_reference"])
one(
    "report_building_safety_hazard",
    FAC,
    "Reports a safety hazard in a building to the site's EHS coordinator; critical hazards page the "
    "on-call facility manager.",
    ["building_id", "location_detail", "hazard_type"],
)
one(
    "request_office_move",
    FAC,
    "Plans the move of an employee to a desk in another building, including crates and IT re-patching.",
    ["employee_id", "target_building_id", "target_desk_id", "move_date"],
)
one(
    "get_building_opening_hours",
    FAC,
    "Opening hours, reception hours and holiday closures of a building.",
    ["building_id"],
)
one("list_available_desks_today", FAC, "Desks still free today, by floor.", opt=["building_id"])
one(
    "get_utilities_consumption",
    FAC,
    "Electricity, gas and water consumption of a building for a month.",
    ["building_id", "month"],
)
one(
    "order_office_supplies",
    FAC,
    "Orders office supplies from the stationery catalogue for delivery to a room.",
    ["supply_items", "delivery_location"],
)
one(
    "submit_lease_termination_notice",
    FAC,
    "Prepares the formal notice to terminate a property lease. Real estate counsel reviews it before it "
    "is sent to the landlord.",
    ["lease_id", "termination_date", "termination_notice_reason"],
)
one(
    "request_locker_assignment",
    FAC,
    "Assigns you a personal locker in a building, if one is free.",
    ["building_id"],
)
one("get_hybrid_work_policy", FAC, "The current hybrid work and office attendance policy.")
one("list_open_facilities_requests_for_me", FAC, "Facilities requests you raised that are not closed.")
one(
    "get_building_announcements", FAC, "Current announcements for your home building, e.g. works or closures."
)
one("list_upcoming_visitors_for_me", FAC, "Visitors registered with you as host in the next seven days.")
one("get_cafeteria_menu_today", FAC, "Today's menu in the staff restaurant.", opt=["building_id"])


# ============================================================================================
# marketing
# ============================================================================================

fam(
    "campaign_create",
    MKT,
    "Sets up {kind} campaign for an audience segment from a start date; without an end date it runs until paused. {detail}",
    ["campaign_name", "audience_segment_id", "start_date"],
    [("end_date", "Last day of the campaign; it runs until paused if omitted.")],
    v(
        "create_email_campaign",
        kind="an email",
        detail="Content is added later in the email editor; the campaign starts as a draft.",
    ),
    v(
        "create_social_media_campaign",
        kind="a paid social media",
        detail="Choose the platforms; each gets its own ad set.",
        add_req=["social_platforms"],
    ),
    v(
        "create_paid_search_campaign",
        kind="a paid search",
        detail="Bids run on the keywords given, capped by the daily budget.",
        add_req=["daily_budget", "keywords"],
    ),
)
fam(
    "campaign_performance",
    MKT,
    "Performance of {kind} campaign to date: {metrics}.",
    ["campaign_id"],
    [],
    v(
        "get_campaign_performance_email",
        kind="an email",
        metrics="sends, opens, clicks, unsubscribes and attributed pipeline",
    ),
    v(
        "get_campaign_performance_social",
        kind="a social media",
        metrics="impressions, engagement rate, clicks and cost per click by platform",
    ),
    v(
        "get_campaign_performance_paid_search",
        kind="a paid search",
        metrics="impressions, clicks, cost, conversions and cost per acquisition by keyword",
    ),
)
fam(
    "creative_review",
    MKT,
    "Sends a creative asset to {who} for review before it can be published. {detail}",
    ["asset_id", "due_date"],
    ["notes"],
    v(
        "submit_creative_for_brand_review",
        who="the brand team",
        detail="They check logo use, colours and tone of voice.",
    ),
    v(
        "submit_creative_for_legal_review",
        who="marketing counsel",
        detail="They check claims, comparisons with competitors and disclaimers.",
    ),
)
fam(
    "segment_create",
    MKT,
    "Builds a new audience segment {how}. {detail}",
    ["segment_name"],
    [],
    v(
        "create_audience_segment_rule_based",
        how="from filter rules on contact and account fields",
        detail="Membership is re-evaluated every night.",
        add_req=["segment_rules"],
    ),
    v(
        "create_audience_segment_lookalike",
        how="as a look-alike of an existing segment",
        detail="The model finds contacts that resemble the seed segment's members.",
        add_req=["seed_segment_id"],
    ),
)
fam(
    "unsubscribe",
    MKT,
    "Unsubscribes a contact {scope}. {detail}",
    ["contact_email"],
    [],
    v(
        "unsubscribe_contact_all",
        scope="from all marketing email",
        detail="Transactional messages such as invoices are still delivered.",
    ),
    v(
        "unsubscribe_contact_from_list",
        scope="from one mailing list only",
        detail="Other subscriptions stay active.",
        add_req=["mailing_list_id"],
    ),
)
fam(
    "event_registration",
    MKT,
    "Registers an attendee for {what}. {detail}",
    ["marketing_event_id", "attendee_email", "attendee_name"],
    [],
    v("register_attendee_webinar", what="a webinar", detail="The join link is emailed right away."),
    v(
        "register_attendee_trade_show",
        what="a trade show booth or conference we host",
        detail="A printed badge of the chosen type is waiting at the entrance.",
        add_req=["badge_type"],
    ),
)
fam(
    "marketing_budget",
    MKT,
    "{what} for the current fiscal year.",
    [],
    [],
    v("get_marketing_budget_remaining", what="Marketing budget, committed spend and what is left per team"),
    v(
        "get_marketing_spend_by_channel",
        what="Actual marketing spend split by channel (events, paid social, search, content)",
    ),
)
fam(
    "mql_routing",
    MKT,
    "{what} {detail}",
    ["lead_id"],
    [],
    v(
        "send_mql_to_sales",
        what="Hands a marketing-qualified lead to a sales rep.",
        detail="The rep gets a task to follow up within two business days.",
        add_req=["sales_owner_id"],
    ),
    v(
        "recycle_mql_to_nurture",
        what="Sends a lead that is not ready to buy back into a nurture stream.",
        detail="Its score is reset and it can re-qualify later.",
        add_req=["nurture_track"],
    ),
)
one(
    "schedule_social_post",
    MKT,
    "Schedules an organic post on a company social channel.",
    ["social_channel", "post_text", "publish_at"],
)
one(
    "get_website_traffic_report",
    MKT,
    "Sessions, visitors, top pages and traffic sources of the corporate website in a date range.",
    [("start_date", "First day."), ("end_date", "Last day.")],
)
one(
    "pause_campaign",
    MKT,
    "Pauses a running campaign in every channel; spend stops within the hour.",
    ["campaign_id"],
)
one(
    "upload_marketing_asset",
    MKT,
    "Adds a file to the digital asset library with tags so others can find it.",
    ["file_name", "asset_type", "tags"],
)
one("get_brand_guidelines", MKT, "Link to the current brand guidelines and logo pack.")
one(
    "import_event_leads",
    MKT,
    "Imports a spreadsheet of leads scanned at an event and links them to the event.",
    ["marketing_event_id", "file_url"],
)
one("list_my_draft_campaigns", MKT, "Campaigns you created that have not been launched.")
one(
    "create_utm_link",
    MKT,
    "Builds a tracked URL with UTM parameters and a short link for it.",
    ["destination_url", "utm_source", "utm_medium", "utm_campaign"],
)
one(
    "start_ab_test",
    MKT,
    "Splits an email campaign's audience between two subject lines; the winner is sent to the rest "
    "after four hours.",
    ["campaign_id", "variant_a_subject", "variant_b_subject", "split_percent"],
)
one(
    "publish_press_release",
    MKT,
    "Queues a press release on the newsroom, held until the embargo ends.",
    ["press_title", "press_body", "embargo_until"],
)
one(
    "get_nps_results",
    MKT,
    "Net promoter score with verbatim comments for the latest survey wave.",
    opt=["fiscal_quarter"],
)
one(
    "check_marketing_consent",
    MKT,
    "Whether we hold marketing consent for an email address, and its source.",
    ["contact_email"],
)
one("list_active_campaigns", MKT, "Campaigns running today across all channels, with spend to date.")
one("list_upcoming_marketing_events", MKT, "Webinars, trade shows and field events in the next 90 days.")
one(
    "get_lead_funnel_summary",
    MKT,
    "Leads, MQLs, SQLs and opportunities created this quarter with conversion rates.",
)
one("list_assets_pending_review", MKT, "Creative assets waiting for brand or legal review.")


# ============================================================================================
# travel and expense (held out)
# ============================================================================================

fam(
    "flight_booking",
    TE,
    "Books {what} for an employee through the corporate travel agency. {detail} The fare is charged to "
    "the central lodge card and appears on the trip.",
    ["employee_id", "origin_airport", "destination_airport", "departure_date"],
    ["return_date", "cabin_class"],
    v(
        "book_flight_domestic",
        what="a domestic flight",
        detail="Economy is the default cabin; both airports must be in the same country.",
    ),
    v(
        "book_flight_international",
        what="an international flight",
        detail="The passport's issuing country is needed for visa and API data checks.",
        add_req=["passport_country"],
    ),
    v(
        "book_flight_multi_city",
        what="a multi-city itinerary of two or more legs",
        detail="Give every leg in order; the first leg's airports and date go in the main fields.",
        add_req=["flight_legs"],
        drop=["return_date"],
    ),
)
fam(
    "hotel_booking",
    TE,
    "Books a hotel room in a city for an employee {rate}. {detail}",
    ["employee_id", "city", "check_in_date", "check_out_date"],
    [],
    v(
        "book_hotel_corporate_rate",
        rate="at a negotiated corporate rate",
        detail="Only preferred hotels are offered; stays up to 13 nights.",
    ),
    v(
        "book_hotel_long_stay",
        rate="as a long stay of two weeks or more",
        detail="Serviced apartments are included and a monthly rate is negotiated where possible.",
    ),
)
fam(
    "ground_transport",
    TE,
    "{what} {detail}",
    ["employee_id", "pickup_location", "pickup_datetime"],
    [],
    v(
        "book_rental_car",
        what="Reserves a rental car from the preferred rental company, collected and returned at set times.",
        detail="Full insurance is included under the corporate agreement.",
        add_req=["return_datetime"],
        add_opt=["car_class"],
    ),
    v(
        "book_airport_transfer",
        what="Books a chauffeur transfer from a pickup point to the airport or from the airport to a hotel.",
        detail="The driver tracks the flight and waits up to 60 minutes.",
        add_opt=[("destination_station", "Drop-off address or airport.")],
    ),
)
fam(
    "travel_request",
    TE,
    "Submits a travel pre-approval request {scope}. {detail} Nothing can be booked before the request "
    "is approved.",
    ["trip_purpose", "start_date", "end_date", "estimated_cost"],
    [("currency", "Currency of the estimate; defaults to your home currency.")],
    v(
        "submit_travel_request_domestic",
        scope="for a trip inside your home country",
        detail="Your line manager is the only approver.",
    ),
    v(
        "submit_travel_request_international",
        scope="for a trip abroad",
        detail="Security reviews the destination country and a risk briefing is attached.",
        add_req=["destination_country_code"],
    ),
    v(
        "submit_travel_request_group",
        scope="for several employees travelling together",
        detail="One approval covers everyone; the cost is the group total.",
        add_req=["traveler_ids"],
    ),
)
fam(
    "expense_report_create",
    TE,
    "Opens a new expense report {kind}, charged to a cost center. {detail}",
    ["report_title", "cost_center"],
    [],
    v(
        "create_expense_report_trip",
        kind="linked to an approved trip",
        detail="Bookings and card charges of the trip are pulled in automatically.",
        add_req=["trip_id"],
    ),
    v(
        "create_expense_report_non_trip",
        kind="for local expenses not tied to a trip",
        detail="Client lunches, training fees and similar items go here.",
    ),
)
fam(
    "expense_item",
    TE,
    "Adds {what} to an expense report in draft. {detail}",
    ["expense_report_id", "expense_date"],
    [],
    v(
        "add_expense_item_receipt",
        what="a receipt-based expense",
        detail="Amount, currency and category come from the receipt; amounts above 75 need an image.",
        add_req=["amount", "currency", "expense_category"],
    ),
    v(
        "add_expense_item_per_diem",
        what="a per diem claim for meals and incidentals",
        detail="The daily rate of the country is applied, so no receipts are needed.",
        add_req=["country_code", "number_of_days"],
    ),
    v(
        "add_expense_item_mileage",
        what="a mileage claim for driving a private vehicle",
        detail="The reimbursement is distance times the rate for the vehicle type.",
        add_req=["distance_km", "vehicle_type"],
    ),
    v(
        "add_expense_item_hospitality",
        what="a client entertainment or business meal",
        detail="Every attendee must be listed, otherwise the expense is not tax-deductible.",
        add_req=["amount", "expense_attendees"],
    ),
)
fam(
    "expense_approve",
    TE,
    "{what} {detail}",
    [],
    [],
    v(
        "approve_expense_report",
        what="Approves one expense report that complies with the travel policy.",
        detail="It goes on to finance audit and then to payment.",
        add_req=["expense_report_id"],
        add_opt=["approver_comment"],
    ),
    v(
        "approve_expense_report_with_exception",
        what="Approves one expense report even though it breaks the travel policy.",
        detail="The exception and your reason are logged for audit.",
        add_req=["expense_report_id", "exception_justification"],
    ),
    v(
        "approve_all_expense_reports_under_threshold",
        what="Approves, in one go, every policy-compliant expense report in your inbox below an amount.",
        detail="Reports with policy warnings are skipped.",
        add_opt=["threshold_amount"],
    ),
)
fam(
    "expense_submit",
    TE,
    "{what}",
    ["expense_report_id"],
    [],
    v("submit_expense_report", what="Submits a draft expense report to your manager for approval."),
    v(
        "recall_expense_report",
        what="Pulls a submitted expense report back to draft before it is approved, so it can be edited.",
    ),
)
fam(
    "expense_status",
    TE,
    "Where an expense report is {what}.",
    ["expense_report_id"],
    [],
    v(
        "get_reimbursement_status",
        what="in payment: approved amount, payment date and the bank account credited",
    ),
    v("get_expense_report_audit_status", what="in finance audit, with any items the auditor questioned"),
)
fam(
    "card_dispute",
    TE,
    "Disputes a corporate card transaction {kind}. {detail}",
    ["card_last_four", "card_transaction_id", "dispute_details"],
    [],
    v(
        "dispute_card_transaction_fraud",
        kind="you did not make",
        detail="The card is blocked at once and a new one is sent.",
    ),
    v(
        "dispute_card_transaction_billing_error",
        kind="that was charged wrongly, such as a double charge or wrong amount",
        detail="The card stays active while the issuer investigates.",
    ),
)
fam(
    "trip_lists",
    TE,
    "{what}, with destinations and booking references.",
    [],
    [],
    v(
        "list_my_upcoming_trips",
        desc="Trips you have booked that have not started yet, with flight and hotel references.",
        what="Your trips that start in the future",
    ),
    v(
        "list_my_past_trips",
        desc="History of your completed trips in a fiscal year, with the total cost of each.",
        what="Your completed trips this year",
        add_opt=["fiscal_year"],
    ),
    v("list_team_travel_this_week", what="Who in your team is travelling this week and where"),
)
fam(
    "per_diem_rate",
    TE,
    "Looks up the per diem allowance for {where}. {detail}",
    ["city"],
    [],
    v(
        "get_per_diem_rate_domestic",
        where="a city in the home country",
        detail="Rates follow the national tax tables by state.",
        add_req=["state_code"],
    ),
    v(
        "get_per_diem_rate_international",
        where="a foreign city",
        detail="Rates are set per country with city surcharges.",
        add_req=["country_code"],
    ),
)
fam(
    "policy_check",
    TE,
    "Checks the {what} of a trip against the travel policy and returns each violation. {detail}",
    ["trip_id"],
    [],
    v(
        "check_travel_policy_compliance_flight",
        what="flights",
        detail="Covers cabin class, booking lead time and fare ceilings.",
    ),
    v(
        "check_travel_policy_compliance_hotel",
        what="hotel stays",
        detail="Covers nightly rate caps by city and preferred-hotel use.",
    ),
)
fam(
    "booking_cancel",
    TE,
    "Cancels {what}. {detail}",
    [],
    [],
    v(
        "cancel_flight_booking",
        what="a flight booking by its airline reference",
        detail="Unused non-refundable tickets stay as credit with the airline.",
        add_req=["flight_booking_reference"],
    ),
    v(
        "cancel_hotel_booking",
        what="a hotel reservation",
        detail="Free up to the hotel's cancellation deadline; after that one night is charged.",
        add_req=["hotel_confirmation_number"],
    ),
    v(
        "cancel_entire_trip",
        what="a whole trip with every booking on it",
        detail="Flights, hotels and cars are cancelled together and the travel request is closed.",
        add_req=["trip_id"],
    ),
)
fam(
    "visa_support",
    TE,
    "Requests {what} for an employee travelling to a country on a given date. {detail}",
    ["employee_id", "destination_country_code", "departure_date"],
    [],
    v(
        "request_visa_invitation_letter",
        what="an invitation letter from the local entity",
        detail="The letter is what most consulates ask for in a business visa application.",
    ),
    v(
        "request_visa_service_assistance",
        what="full support from the visa service provider",
        detail="The provider books the consulate appointment and checks documents.",
    ),
)
fam(
    "rail_booking",
    TE,
    "Books a {kind} train ticket for an employee. {detail}",
    ["employee_id", "origin_station", "destination_station", "travel_date"],
    [],
    v(
        "book_rail_ticket_domestic",
        kind="domestic",
        detail="It defaults to second class with a flexible fare.",
    ),
    v(
        "book_rail_ticket_cross_border",
        kind="cross-border",
        detail="Used for trains such as Eurostar, which need passport details.",
        add_req=["passport_country"],
    ),
)
fam(
    "cash_advance",
    TE,
    "Requests a cash advance for {what}, paid to the employee's bank account before the date needed. {detail}",
    ["employee_id", "amount", "needed_by_date"],
    [("currency", "Currency of the advance; defaults to the payroll currency.")],
    v(
        "request_cash_advance_trip",
        what="a business trip",
        detail="It is netted against the trip's expense report.",
        add_req=["trip_id"],
    ),
    v(
        "request_cash_advance_relocation",
        what="relocation costs",
        detail="It is settled against the relocation allowance.",
        add_req=["advance_purpose"],
    ),
)
one(
    "request_corporate_card",
    TE,
    "Applies for a corporate credit card with a monthly limit.",
    ["employee_id", "monthly_limit", "currency"],
)
one(
    "report_corporate_card_lost",
    TE,
    "Blocks a lost corporate card and orders a replacement.",
    ["card_last_four"],
)
one("get_travel_policy", TE, "Full text of the travel and expense policy with its current limits.")
one("list_unassigned_card_transactions", TE, "Your card transactions that are not yet on any expense report.")
one("get_travel_risk_alerts", TE, "Security and health alerts for a destination country.", ["country_code"])
one(
    "register_frequent_flyer_number",
    TE,
    "Stores a loyalty number on your traveler profile for one airline.",
    ["airline_code", "frequent_flyer_number"],
)
one(
    "update_traveler_passport",
    TE,
    "Updates passport details on your traveler profile; the agency uses them for international bookings.",
    ["passport_number", "passport_expiry", "nationality"],
)
one("get_expense_category_list", TE, "The expense types you can use, with their limits and receipt rules.")
one(
    "delegate_expense_approval",
    TE,
    "Lets someone else approve expense reports on your behalf for a period, for example during leave.",
    ["delegate_employee_id", "start_date", "end_date"],
)
one(
    "convert_expense_currency",
    TE,
    "Converts an amount at the corporate rate of the transaction date, the same rate used for reimbursement.",
    ["amount", "from_currency", "to_currency", "transaction_date"],
)
one(
    "get_carbon_footprint_for_trip",
    TE,
    "Estimated CO2 emissions of a trip's flights, rail and hotel nights.",
    ["trip_id"],
)
one(
    "get_mileage_reimbursement_rate",
    TE,
    "Current rate per kilometre for private vehicles.",
    opt=["country_code", "vehicle_type"],
)
one(
    "attach_receipt_image",
    TE,
    "Attaches a photo or PDF of a receipt to an expense line.",
    ["expense_item_id", "file_url"],
)
one(
    "list_expense_reports_awaiting_my_approval",
    TE,
    "Expense reports from your team that wait for your approval.",
)
one("get_my_reimbursement_history", TE, "Reimbursements paid to you in the last twelve months.")
one(
    "list_travelers_in_country_now",
    TE,
    "Employees currently travelling, optionally in one country (duty of care).",
    opt=["country_code"],
)
one(
    "get_my_travel_profile",
    TE,
    "Your traveler profile: seat and meal preferences, loyalty numbers, passport on file.",
)
one("list_my_draft_expense_reports", TE, "Expense reports you started but have not submitted.")


# ============================================================================================
# legal and compliance (held out)
# ============================================================================================

fam(
    "contract_review",
    LEGAL,
    "Asks the legal team to review {what} before it is signed. {detail}",
    ["counterparty_name", "document_url", "needed_by"],
    ["notes"],
    v(
        "request_contract_review_nda",
        what="a non-disclosure agreement on the counterparty's paper",
        detail="Standard NDAs usually come back within two business days.",
    ),
    v(
        "request_contract_review_msa",
        what="a master services agreement",
        detail="Contract value drives who in legal reviews it and whether finance must co-approve.",
        add_req=["contract_value"],
        add_opt=[("currency", "Currency of the contract value; defaults to USD.")],
    ),
    v(
        "request_contract_review_sow",
        what="a statement of work under an existing master agreement",
        detail="It is checked for consistency with the parent contract.",
        add_req=["contract_id"],
    ),
)
fam(
    "nda_generate",
    LEGAL,
    "Generates {kind} non-disclosure agreement from the approved template, ready for signature. {detail}",
    ["counterparty_name", "counterparty_country", "effective_date"],
    ["nda_purpose"],
    v("generate_nda_mutual", kind="a mutual", detail="Both sides protect what they share."),
    v(
        "generate_nda_one_way",
        kind="a one-way",
        detail="Only the disclosing side's information is protected; say which side discloses.",
        add_req=["disclosing_party"],
    ),
)
fam(
    "legal_hold",
    LEGAL,
    "{what} {detail}",
    ["matter_id"],
    [],
    v(
        "issue_legal_hold_custodians",
        desc="Sends a preservation notice to named employees for a legal matter. Each must acknowledge it, and their mailboxes and drives are protected from deletion.",
        what="Places named custodians under a legal hold for a matter.",
        detail="Each custodian must acknowledge the notice and their mailboxes are preserved.",
        add_req=["custodian_ids"],
    ),
    v(
        "issue_legal_hold_department",
        desc="Applies a legal hold to a whole department for a matter; anyone who joins that department while the hold is active is added automatically.",
        what="Places every member of a department under a legal hold for a matter.",
        detail="New joiners of the department are added automatically while the hold is active.",
        add_req=["department"],
    ),
    v(
        "release_legal_hold",
        what="Lifts a legal hold once the matter no longer requires preservation.",
        detail="Custodians are notified and normal retention resumes.",
        add_req=["legal_hold_id"],
    ),
)
fam(
    "sanctions_screening",
    LEGAL,
    "Screens {who} against global sanctions and denied-party lists. {detail}",
    ["country_code"],
    [],
    v(
        "screen_party_sanctions_individual",
        who="a person",
        detail="Date of birth reduces false positives.",
        add_req=["full_name"],
        add_opt=["date_of_birth"],
    ),
    v(
        "screen_party_sanctions_entity",
        who="a company",
        detail="Owners above 50 percent are screened as well.",
        add_req=["entity_name"],
        add_opt=["registration_number"],
    ),
)
fam(
    "coi_disclosure",
    LEGAL,
    "{what} Compliance reviews it and may set conditions.",
    ["disclosure_text"],
    [],
    v(
        "submit_conflict_of_interest_disclosure",
        what="Files a new conflict-of-interest disclosure for yourself.",
    ),
    v(
        "update_conflict_of_interest_disclosure",
        what="Changes a disclosure you filed earlier, for example when an outside role ends.",
        add_req=["disclosure_id"],
    ),
)
fam(
    "attestation",
    LEGAL,
    "Records your acknowledgement of {what}.",
    [],
    [],
    v("attest_code_of_conduct", what="this year's code of conduct"),
    v(
        "attest_policy_acknowledgement",
        what="a specific company policy you were asked to read",
        add_req=["policy_id"],
    ),
)
fam(
    "gift_register",
    LEGAL,
    "Logs a gift or hospitality {direction} in the gifts register. {detail}",
    ["counterparty_name", "gift_description", "estimated_gift_value", "event_date"],
    [("currency", "Currency of the value; defaults to EUR.")],
    v(
        "log_gift_received",
        direction="you received",
        detail="Anything above 100 EUR needs your manager's sign-off.",
    ),
    v(
        "log_gift_given",
        direction="you gave to a business partner",
        detail="Gifts to public officials always need compliance pre-approval.",
        add_req=["government_official"],
    ),
)
fam(
    "contract_lists",
    LEGAL,
    "Contracts {what}, with counterparty and owner.",
    [],
    [],
    v(
        "list_contracts_expiring_soon",
        what="that expire or auto-renew in the next 90 days",
        add_opt=["days_ahead"],
    ),
    v("list_my_contracts_pending_signature", what="you own that are out for signature"),
)
fam(
    "dsar",
    LEGAL,
    "Opens a data subject request to {what} under a privacy law, starting the statutory clock from the "
    "date received. {detail}",
    ["data_subject_email", "privacy_regime", "received_date"],
    [],
    v(
        "process_data_subject_access_request",
        what="give a person a copy of their personal data",
        detail="Systems owners are asked to export what they hold.",
    ),
    v(
        "process_data_subject_erasure_request",
        what="delete a person's personal data",
        detail="Data under legal hold or retention duty is kept and the person is told why.",
    ),
    v(
        "process_data_subject_rectification_request",
        what="correct inaccurate personal data",
        detail="Describe the correction in the notes.",
        add_opt=["notes"],
    ),
)
fam(
    "matter_open",
    LEGAL,
    "Opens a new {kind} matter in the legal matter system. {detail}",
    ["matter_title", "opposing_party", "jurisdiction", "matter_description"],
    [],
    v("open_litigation_matter", kind="litigation", detail="Outside counsel can be engaged once it is open."),
    v(
        "open_regulatory_inquiry_matter",
        kind="regulatory inquiry",
        detail="The opposing party is the authority; response deadlines are tracked.",
        add_req=["response_due_date"],
    ),
)
fam(
    "esignature",
    LEGAL,
    "Sends a final contract for electronic signature {how}.",
    ["contract_id", "signer_emails"],
    [],
    v(
        "send_for_esignature_sequential",
        how="in the order of the signer list; each signer is invited after the previous one signs",
    ),
    v("send_for_esignature_parallel", how="to all signers at the same time, in any order"),
)
fam(
    "compliance_training_status",
    LEGAL,
    "Completion status of mandatory compliance training {who}.",
    [],
    [],
    v("get_my_compliance_training_status", who="for you"),
    v("get_team_compliance_training_status", who="for each of your direct reports"),
)
fam(
    "trademark",
    LEGAL,
    "Files a trademark application {scope}. {detail}",
    ["mark_text", "nice_classes", "legal_entity_id"],
    [],
    v(
        "file_trademark_application_national",
        scope="with one national office",
        detail="The office is chosen by jurisdiction.",
        add_req=["jurisdiction"],
    ),
    v(
        "file_trademark_application_madrid",
        scope="internationally under the Madrid Protocol",
        detail="It designates several countries through WIPO from one filing.",
        add_req=["designated_countries"],
    ),
)
fam(
    "privacy_assessment",
    LEGAL,
    "Starts {what} for a project that processes personal data. {detail}",
    ["project_name", "data_categories", "processing_purpose"],
    [],
    v(
        "submit_privacy_impact_assessment",
        what="a privacy impact assessment",
        detail="The privacy office rates the risk.",
    ),
    v(
        "submit_data_transfer_impact_assessment",
        what="a transfer impact assessment",
        detail="Needed when the data leaves the EEA; give the destination country.",
        add_req=["destination_country_code"],
    ),
)
fam(
    "contract_amendment",
    LEGAL,
    "Drafts an amendment to an existing contract that {what}. {detail}",
    ["contract_id", "effective_date", "amendment_summary"],
    [],
    v(
        "create_contract_amendment_price",
        what="changes prices or fees",
        detail="Describe the new prices in the summary.",
    ),
    v(
        "create_contract_amendment_term_extension",
        what="extends the contract term",
        detail="The new end date replaces the old one.",
        add_req=["new_end_date"],
    ),
)
fam(
    "counsel_invoice",
    LEGAL,
    "{what} an outside counsel invoice booked to a legal matter. {detail}",
    ["matter_id", "legal_invoice_id"],
    [],
    v("approve_outside_counsel_invoice", what="Approves", detail="It is released to accounts payable."),
    v(
        "reject_outside_counsel_invoice",
        what="Rejects",
        detail="The law firm is told which billing guideline was breached.",
        add_req=["invoice_rejection_reason"],
    ),
)
fam(
    "due_diligence",
    LEGAL,
    "Starts {level} third-party due diligence before we contract with a third party. {detail}",
    ["third_party_name", "country_code"],
    [],
    v(
        "start_third_party_due_diligence_standard",
        level="standard",
        detail="It covers a questionnaire and database checks.",
    ),
    v(
        "start_third_party_due_diligence_enhanced",
        level="enhanced",
        detail="Adds an external investigation; needed when there is a red flag.",
        add_req=["risk_reason"],
    ),
)
one(
    "submit_ethics_hotline_report",
    LEGAL,
    "Submits a report to the ethics hotline. Reports are confidential.",
    ["ethics_category", "report_text"],
    ["anonymous"],
)
one(
    "get_contract_details",
    LEGAL,
    "Parties, term, value, renewal terms and owner of a contract.",
    ["contract_id"],
)
one(
    "get_retention_schedule_for_record_type",
    LEGAL,
    "How long a type of record must be kept and the legal basis.",
    ["record_type"],
)
one(
    "request_export_control_classification",
    LEGAL,
    "Asks trade compliance to classify an item under export control lists (ECCN and EU dual-use).",
    ["material_id", "technical_description"],
)
one("get_signing_authority_matrix", LEGAL, "Who may sign what, by contract type and value.")
one(
    "log_regulatory_filing_deadline",
    LEGAL,
    "Adds a regulatory filing and its due date to the compliance calendar.",
    ["regulator", "filing_type", "due_date"],
)
one(
    "check_entity_good_standing",
    LEGAL,
    "Whether a group legal entity is in good standing with its registry.",
    ["legal_entity_id"],
)
one(
    "request_power_of_attorney",
    LEGAL,
    "Requests a power of attorney for an employee to sign on behalf of a legal entity; board approval may be "
    "needed.",
    ["legal_entity_id", "grantee_employee_id", "poa_scope", "valid_until"],
)
one(
    "get_open_audit_findings",
    LEGAL,
    "Open internal audit findings with owners and target dates.",
    opt=["review_area"],
)
one(
    "record_audit_finding_remediation",
    LEGAL,
    "Records the remediation plan for an audit finding, its owner and target date.",
    ["finding_id", "remediation_plan", "owner_employee_id", "target_date"],
)
one(
    "log_subpoena_received",
    LEGAL,
    "Registers a subpoena or court order served on the company so litigation can respond on time.",
    ["issuing_authority", "received_date", "response_due_date"],
)
one(
    "request_competition_law_review",
    LEGAL,
    "Asks antitrust counsel whether a deal or cooperation needs merger filing or raises competition concerns.",
    ["deal_name", "counterparties", "deal_value", "currency"],
)
one(
    "request_records_destruction_approval",
    LEGAL,
    "Asks records management to approve destroying records past retention.",
    ["record_type", "record_ids"],
)
one(
    "list_open_matters_for_me",
    LEGAL,
    "Legal matters where you are the responsible lawyer or business contact.",
)
one("list_active_legal_holds_for_me", LEGAL, "Legal holds you are currently a custodian of.")
one("get_pending_policy_attestations", LEGAL, "Policies you still have to read and acknowledge.")
one(
    "list_upcoming_regulatory_deadlines",
    LEGAL,
    "Regulatory filings due in the next 60 days.",
    opt=["regulator"],
)
one("list_contracts_without_owner", LEGAL, "Active contracts whose business owner has left the company.")
one(
    "get_gift_register_summary",
    LEGAL,
    "Gifts and hospitality logged in your organisation this year.",
    opt=["fiscal_year"],
)


# ============================================================================================
# More singletons: reports, worklists and one-off actions with no near-duplicate
# ============================================================================================

one(
    "list_vat_returns_due",
    FIN,
    "VAT and GST returns due this quarter per reporting country, with their filing status.",
    opt=["country_code"],
)
one(
    "get_intercompany_mismatches",
    FIN,
    "Pairs of group companies whose intercompany receivable and payable balances disagree, with the difference to clear before consolidation.",
    opt=["fiscal_period"],
)
one(
    "get_document_audit_trail",
    FIN,
    "Change history of a posted accounting document: who entered, changed or reversed it and when.",
    ["journal_entry_id"],
)
one(
    "list_recurring_entry_templates",
    FIN,
    "Recurring journal entry templates defined for your company codes and the date each runs next.",
)
one(
    "get_savings_tracker",
    PROC,
    "Negotiated savings booked this fiscal year against target, per category manager.",
)
one(
    "list_maverick_spend_invoices",
    PROC,
    "Invoices paid without a purchase order in a period, grouped by cost center, for spend compliance follow-up.",
    opt=["fiscal_period"],
)
one(
    "request_supplier_sustainability_questionnaire",
    PROC,
    "Sends a supplier the annual ESG questionnaire and tracks the response deadline.",
    ["vendor_id", "due_date"],
)
one(
    "list_pending_catalog_price_updates",
    PROC,
    "Supplier price files waiting for a buyer to accept before the new prices go live.",
)
one(
    "get_headcount_report",
    HR,
    "Headcount and full-time equivalents by department at month-end, with joiners and leavers.",
    opt=["department"],
)
one(
    "list_probation_periods_ending",
    HR,
    "People in your organisation whose probation period ends in the next 30 days.",
)
one(
    "request_candidate_reference_check",
    HR,
    "Emails a referee named by a candidate a short reference questionnaire; answers are attached to the candidate file.",
    ["candidate_id", ("contact_email", "Email address of the referee.")],
)
one("get_employee_handbook", HR, "Link to the latest employee handbook for your country.")
one(
    "get_win_loss_analysis",
    SALES,
    "Win rate, average deal size and top loss reasons of closed opportunities.",
    opt=["fiscal_quarter", "sales_region"],
)
one(
    "list_renewals_due_next_quarter",
    SALES,
    "Customer contracts that come up for renewal next quarter, with their current annual value.",
)
one(
    "create_customer_account",
    SALES,
    "Creates a customer master record for a new buyer so orders can be booked; credit checks run overnight.",
    ["company_name", "country_code", "contact_email"],
)
one(
    "get_sellable_product_list", SALES, "Products currently released for sale, with list price and lead time."
)
one(
    "get_carrier_on_time_performance",
    SCM,
    "Pickup and delivery punctuality of each carrier over the last 90 days.",
    opt=["carrier_scac"],
)
one(
    "list_hazardous_goods_in_transit",
    SCM,
    "Dangerous goods shipments currently on the road, with UN numbers and carriers.",
)
one(
    "get_receiving_backlog",
    SCM,
    "Pallets received at a warehouse dock that have not been put away yet, by age.",
    ["warehouse_id"],
)
one(
    "get_customer_sentiment_trend",
    CS,
    "Sentiment of incoming customer messages over the last 30 days, by channel.",
)
one(
    "list_vip_customers_with_open_cases",
    CS,
    "Top-tier customers who currently have an open case, with the case owner.",
)
one(
    "flag_customer_account_for_fraud_review",
    CS,
    "Marks a customer account for review by the fraud team; refunds and vouchers for it are frozen meanwhile.",
    ["customer_id", "note_text"],
)
one(
    "list_my_open_service_requests",
    ITSM,
    "Requests you raised in the IT portal for access, hardware or software that are not fulfilled yet.",
)
one(
    "list_servers_missing_patches",
    ITSM,
    "Servers that missed the last patch window, with the missing updates.",
    opt=["assignment_group"],
)
one("get_backup_job_status", ITSM, "Result and size of the last backup runs of a server.", ["hostname"])
one(
    "get_holiday_it_support_hours",
    ITSM,
    "Service desk opening hours and on-call numbers over the coming public holidays.",
)
one(
    "get_energy_consumption_by_line",
    MFG,
    "Electricity and compressed-air use of a production line per shift over a date range.",
    ["line_id", ("start_date", "First day."), ("end_date", "Last day.")],
)
one(
    "list_open_nonconformance_reports",
    MFG,
    "Nonconformance reports still under investigation, by severity.",
    opt=["severity"],
)
one(
    "get_tool_life_status",
    MFG,
    "Remaining life of the cutting tools and moulds used at a work center.",
    ["work_center_id"],
)
one(
    "list_operators_qualified_for_machine",
    MFG,
    "Operators whose training qualifies them to run a given machine, with the date each qualification expires.",
    ["equipment_id"],
)
one(
    "get_fire_drill_schedule",
    FAC,
    "Upcoming evacuation drills in a building and the fire wardens per floor.",
    ["building_id"],
)
one(
    "list_rooms_with_video_conferencing",
    FAC,
    "Meeting rooms equipped for video calls, with capacity.",
    opt=["building_id"],
)
one(
    "request_ergonomic_assessment",
    FAC,
    "Books an ergonomist to assess an employee's workstation and recommend equipment.",
    ["employee_id", "location_detail"],
)
one("get_share_of_voice_report", MKT, "Our share of online mentions against the main competitors this month.")
one("list_influencer_partnerships", MKT, "Active influencer contracts with deliverables and fees.")
one(
    "request_asset_translation",
    MKT,
    "Sends a creative asset to the translation agency for the languages listed.",
    ["asset_id", "target_languages"],
)
one("get_preferred_hotel_list", TE, "Hotels with a negotiated rate in a city and their rate caps.", ["city"])
one(
    "list_unused_airline_credits",
    TE,
    "Your unused ticket credits from cancelled flights and their expiry dates.",
)
one(
    "get_visa_requirements",
    TE,
    "Whether a holder of a given nationality needs a visa for a business trip to a country, and how long it takes.",
    ["nationality", "destination_country_code"],
)
one(
    "list_policy_violations_in_my_team",
    TE,
    "Out-of-policy bookings and expenses of your direct reports this quarter.",
)
one(
    "get_travel_spend_dashboard",
    TE,
    "Air, hotel and rail spend by department with average fares.",
    opt=["fiscal_year"],
)
one(
    "get_board_meeting_calendar",
    LEGAL,
    "Board meetings and annual general meeting deadlines of the group's legal entities.",
)
one(
    "get_litigation_exposure_summary",
    LEGAL,
    "Open lawsuits with claimed amounts, provisions and next hearing dates.",
)
one("get_ethics_case_statistics", LEGAL, "Number of ethics hotline reports by category and region this year.")
one(
    "request_trademark_clearance_search",
    LEGAL,
    "Asks IP counsel to check whether a proposed brand name is free to use before any filing.",
    ["mark_text", "nice_classes"],
)
one(
    "get_sanctions_list_changes",
    LEGAL,
    "Changes to the sanctions lists we screen against over the last week.",
)

one(
    "get_payment_terms_catalogue",
    FIN,
    "Payment terms in use, such as net 30 or 2/10 net 30, with their cash discount rules.",
)
one(
    "request_new_gl_account",
    FIN,
    "Asks the chart-of-accounts owner to open a new general ledger account. Once approved it is created in every company code.",
    ["account_name", "account_type", "justification"],
)
one(
    "log_supplier_price_increase",
    PROC,
    "Records a price increase a supplier has announced for a material, so the category manager can accept or challenge it before it reaches purchase orders.",
    ["vendor_id", "material_id", "new_unit_price", "effective_date"],
)
one(
    "get_incoterms_reference",
    PROC,
    "Plain-language summary of each Incoterms 2020 rule: who pays freight and insurance, and where risk passes.",
)
one(
    "record_exit_interview",
    HR,
    "Stores the notes of an exit interview with a leaver; only HR business partners can read them.",
    ["employee_id", "summary"],
)
one(
    "nominate_employee_for_award",
    HR,
    "Nominates a colleague for a recognition award. The committee reviews nominations every quarter.",
    ["employee_id", "award_category", "justification"],
)
one(
    "register_partner_deal",
    SALES,
    "Registers a reseller's involvement in an opportunity so that partner margins and channel-conflict rules apply.",
    ["opportunity_id", "partner_id"],
)
one(
    "get_territory_assignments",
    SALES,
    "Which rep covers which territory and named accounts.",
    opt=["sales_region"],
)
one(
    "file_carrier_damage_claim",
    SCM,
    "Files a loss or damage claim against the carrier that moved a shipment, with the amount claimed.",
    ["shipment_id", "damage_description", "claim_amount"],
)
one(
    "get_material_logistics_data",
    SCM,
    "Weights, dimensions, packaging units and dangerous-goods data of a material.",
    ["material_id"],
)
one(
    "send_order_status_sms",
    CS,
    "Texts the customer a link where they can follow the live status of their order.",
    ["order_id", "phone_number"],
)
one(
    "get_product_recall_notices",
    CS,
    "Active product recalls and the script agents read to affected customers.",
)
one(
    "decommission_server",
    ITSM,
    "Retires a server on a date: monitoring and backups stop, and its CMDB record is set to retired.",
    ["ci_id", "effective_date"],
)
one(
    "request_guest_wifi_voucher",
    ITSM,
    "Creates a one-day guest Wi-Fi voucher and emails it to you for your visitor.",
    ["visitor_name", "visit_date"],
)
one(
    "get_on_call_engineer",
    ITSM,
    "Who is on call right now for a resolver group, and how to reach them.",
    ["assignment_group"],
)
one(
    "request_lockout_tagout_permit",
    MFG,
    "Issues a lockout/tagout permit so a machine's energy sources can be isolated safely during a work window.",
    ["equipment_id", "start_time", "end_time"],
)
one("get_batch_shelf_life", MFG, "Expiry date and remaining shelf life of a batch.", ["batch_id"])
one(
    "report_lost_and_found_item",
    FAC,
    "Registers an item found or lost in a building with the reception desk.",
    ["building_id", "request_description"],
)
one(
    "get_building_sustainability_certificates",
    FAC,
    "LEED or BREEAM certificates of our buildings and when they expire.",
    opt=["building_id"],
)
one(
    "request_customer_case_study",
    MKT,
    "Nominates a satisfied customer for a published case study; marketing contacts the account owner to arrange the interview.",
    ["customer_id", "sales_owner_id"],
)
one(
    "get_email_deliverability_report",
    MKT,
    "Bounce, spam-complaint and inbox-placement rates of our sending domains.",
)
one(
    "request_travel_insurance_certificate",
    TE,
    "Issues the company travel insurance certificate for a trip, which some consulates and hotels ask for.",
    ["employee_id", "trip_id"],
)
one(
    "split_expense_between_cost_centers",
    TE,
    "Divides one expense line across several cost centers by percentage.",
    ["expense_item_id", "cost_center_splits"],
)
one(
    "register_new_legal_entity",
    LEGAL,
    "Starts incorporation of a new subsidiary: corporate secretarial prepares the filings and board resolutions.",
    ["entity_name", "country_code", "legal_form"],
)
one(
    "get_regulatory_change_alerts",
    LEGAL,
    "New and upcoming regulations that affect us, with the business owner for each.",
)


# ============================================================================================
# Persona bank ingredients
# ============================================================================================

# Per line of business: roles as (title, department, possible seniorities, what such a person does
# as third-person verb phrases), what irritates people in that line, and the shorthand they use.
PERSONA_KIT: dict[str, dict[str, list[Any]]] = {
    FIN: {
        "roles": [
            (
                "accounts payable clerk",
                "Accounts Payable",
                ["junior", "mid"],
                [
                    "reconciles vendor invoices at every month-end",
                    "keys in supplier invoices that arrive as scanned PDFs",
                    "answers suppliers who call about late payments",
                ],
            ),
            (
                "accounts receivable specialist",
                "Accounts Receivable",
                ["junior", "mid"],
                [
                    "chases overdue customer payments across three currencies",
                    "applies incoming bank receipts to open invoices",
                ],
            ),
            (
                "general ledger accountant",
                "Financial Accounting",
                ["mid", "senior"],
                [
                    "closes the books every month against a five-day deadline",
                    "books accruals for services nobody has invoiced yet",
                ],
            ),
            (
                "financial controller",
                "Controlling",
                ["senior", "lead"],
                [
                    "explains cost center variances to budget owners",
                    "answers auditors' sample requests during year-end",
                ],
            ),
            (
                "treasury analyst",
                "Treasury",
                ["mid", "senior"],
                [
                    "watches the daily cash position across a dozen house banks",
                    "releases payment runs after checking the proposal lists",
                ],
            ),
            (
                "group reporting lead",
                "Group Reporting",
                ["lead", "director"],
                [
                    "prepares the consolidation pack for the parent company",
                    "clears intercompany differences before every quarter-end",
                ],
            ),
            (
                "FP&A manager",
                "Financial Planning and Analysis",
                ["senior", "lead"],
                [
                    "builds the rolling forecast that goes to the board",
                    "moves budget between cost centers when priorities shift",
                ],
            ),
            (
                "chief financial officer",
                "Finance",
                ["executive"],
                [
                    "signs off the quarterly results",
                    "reviews cash and working capital every Monday morning",
                ],
            ),
        ],
        "pains": [
            "hates chasing purchase order numbers",
            "gets annoyed when postings bounce off a closed period",
            "has no patience for unexplained exchange-rate swings",
            "dreads the week before the external audit",
            "loses hours to bank lines that will not match",
            "is tired of spreadsheets emailed back and forth",
        ],
        "jargon": [
            "3-way match",
            "GR/IR",
            "DPO",
            "DSO",
            "accruals",
            "month-end close",
            "FX reval",
            "trial balance",
            "intercompany",
            "cost element",
            "dunning run",
            "leading ledger",
        ],
    },
    PROC: {
        "roles": [
            (
                "buyer",
                "Purchasing",
                ["junior", "mid"],
                [
                    "turns a steady stream of requisitions into purchase orders",
                    "expedites late deliveries with suppliers by phone",
                ],
            ),
            (
                "category manager for indirect spend",
                "Strategic Sourcing",
                ["senior", "lead"],
                [
                    "runs sourcing events for facility and IT services",
                    "negotiates frame contracts with the top fifty suppliers",
                ],
            ),
            (
                "procurement operations analyst",
                "Procurement Operations",
                ["mid"],
                [
                    "sorts out invoice blocks caused by price variances",
                    "reports savings against the annual procurement target",
                ],
            ),
            (
                "supplier onboarding coordinator",
                "Supplier Management",
                ["junior", "mid"],
                [
                    "onboards new suppliers after every business reorganisation",
                    "keeps the approved supplier list clean",
                ],
            ),
            (
                "raw materials sourcing lead",
                "Strategic Sourcing",
                ["lead"],
                [
                    "runs reverse auctions for packaging and resin",
                    "tracks supplier price increases against commodity indices",
                ],
            ),
            (
                "chief procurement officer",
                "Procurement",
                ["executive"],
                [
                    "reviews supplier risk with the executive board",
                    "sets the savings target for the whole function",
                ],
            ),
            (
                "purchasing team lead",
                "Purchasing",
                ["lead", "senior"],
                [
                    "approves purchase orders above the buyers' limits",
                    "coaches new buyers on the release strategy",
                ],
            ),
        ],
        "pains": [
            "cannot stand maverick buying outside the catalog",
            "gets irritated by requesters who skip the cost center",
            "hates waiting on second approvers who are on holiday",
            "worries about single-source suppliers",
            "loses patience with suppliers who change bank details by email",
        ],
        "jargon": [
            "PR",
            "PO",
            "RFQ",
            "spend cube",
            "maverick spend",
            "outline agreement",
            "catalog buy",
            "release strategy",
            "SRM",
            "should-cost",
            "tail spend",
        ],
    },
    HR: {
        "roles": [
            (
                "HR business partner",
                "Human Resources",
                ["senior", "lead"],
                [
                    "advises managers on transfers and restructurings",
                    "handles leave and training approvals for a team of thirty",
                ],
            ),
            (
                "talent acquisition specialist",
                "Recruiting",
                ["junior", "mid"],
                [
                    "fills engineering vacancies under pressure from hiring managers",
                    "schedules a dozen interviews a week",
                ],
            ),
            (
                "payroll administrator",
                "Payroll",
                ["mid"],
                [
                    "runs payroll for employees in four countries",
                    "answers questions about payslips every pay day",
                ],
            ),
            (
                "people manager on the shop floor",
                "Operations",
                ["mid", "senior"],
                [
                    "approves leave for forty shift workers",
                    "signs off training requests for the maintenance crew",
                ],
            ),
            (
                "learning and development coordinator",
                "Learning",
                ["junior", "mid"],
                [
                    "keeps mandatory training completion above target",
                    "books external courses for the engineering teams",
                ],
            ),
            (
                "compensation analyst",
                "Total Rewards",
                ["mid", "senior"],
                [
                    "coordinates the annual merit cycle",
                    "checks promotion salaries against the grade bands",
                ],
            ),
            (
                "chief people officer",
                "Human Resources",
                ["executive"],
                [
                    "owns the headcount plan for the whole company",
                    "reviews attrition numbers with the board",
                ],
            ),
            (
                "HR operations lead",
                "HR Shared Services",
                ["lead"],
                [
                    "prepares onboarding for a wave of seasonal hires",
                    "manages relocations between subsidiaries",
                ],
            ),
        ],
        "pains": [
            "gets nervous when budgets for external courses run low",
            "hates re-keying the same employee data in three systems",
            "is frustrated by managers who approve everything at once",
            "dreads payroll cut-off day",
            "finds the self-service portal confusing",
        ],
        "jargon": [
            "headcount",
            "backfill",
            "PTO",
            "merit cycle",
            "comp band",
            "HRBP",
            "req",
            "onboarding",
            "time-to-fill",
            "LMS",
            "job grade",
        ],
    },
    SALES: {
        "roles": [
            (
                "account executive",
                "Sales",
                ["mid", "senior"],
                [
                    "lives in the CRM and updates deal stages between calls",
                    "puts together quotes for renewals that are about to lapse",
                ],
            ),
            (
                "inside sales representative",
                "Inside Sales",
                ["junior"],
                [
                    "qualifies inbound leads from the website",
                    "books demos for the field team",
                ],
            ),
            (
                "regional sales director",
                "Sales",
                ["director"],
                [
                    "runs the weekly forecast call for the region",
                    "approves non-standard discounts before quarter-end",
                ],
            ),
            (
                "sales operations analyst",
                "Sales Operations",
                ["mid"],
                [
                    "maintains territories and account ownership in the CRM",
                    "builds the pipeline reports leadership reads every Monday",
                ],
            ),
            (
                "key account manager",
                "Key Accounts",
                ["senior", "lead"],
                [
                    "manages three strategic accounts worth most of the quota",
                    "negotiates rebate agreements with large distributors",
                ],
            ),
            (
                "deal desk specialist",
                "Deal Desk",
                ["mid", "senior"],
                [
                    "checks every discounted quote against the pricing policy",
                    "turns accepted quotes into clean sales orders",
                ],
            ),
            (
                "chief revenue officer",
                "Sales",
                ["executive"],
                [
                    "commits the quarterly number to the board",
                    "reviews win-loss trends with the regional directors",
                ],
            ),
        ],
        "pains": [
            "hates losing a deal because a quote sat in approval",
            "is impatient with anything that slows down quarter-end",
            "gets annoyed when the pipeline report does not match the CRM",
            "distrusts forecasts that nobody updated",
            "finds logging every call a chore",
        ],
        "jargon": [
            "pipe",
            "commit",
            "best case",
            "ARR",
            "QBR",
            "upsell",
            "close date",
            "MEDDIC",
            "discount approval",
            "quota",
            "territory",
        ],
    },
    SCM: {
        "roles": [
            (
                "supply planner",
                "Supply Planning",
                ["mid", "senior"],
                [
                    "runs MRP and firms up planned orders every morning",
                    "balances stock between three regional warehouses",
                ],
            ),
            (
                "warehouse shift supervisor",
                "Warehouse Operations",
                ["mid", "lead"],
                [
                    "organises cycle counts without stopping picking",
                    "schedules dock doors for inbound trucks",
                ],
            ),
            (
                "logistics coordinator",
                "Transportation",
                ["junior", "mid"],
                [
                    "books trucks and containers for weekly outbound volume",
                    "tracks late shipments and updates customers",
                ],
            ),
            (
                "demand planner",
                "Demand Planning",
                ["mid"],
                [
                    "reviews the statistical forecast before the S&OP meeting",
                    "adjusts forecasts after every promotion",
                ],
            ),
            (
                "customs and trade specialist",
                "Global Trade",
                ["mid", "senior"],
                [
                    "clears shipments through customs at two border crossings",
                    "classifies new products with the right tariff codes",
                ],
            ),
            (
                "head of logistics",
                "Logistics",
                ["director"],
                [
                    "negotiates annual rates with freight carriers",
                    "reports OTIF to the operations board",
                ],
            ),
            (
                "inventory analyst",
                "Inventory Control",
                ["junior", "mid"],
                [
                    "sets safety stock levels for fast movers",
                    "investigates count differences in the warehouse",
                ],
            ),
        ],
        "pains": [
            "hates surprise stock-outs on fast movers",
            "gets stressed when containers sit at the port",
            "is fed up with carriers that miss pickup windows",
            "distrusts system stock after a bad count",
            "loses patience with last-minute rush orders",
        ],
        "jargon": [
            "ATP",
            "MRP",
            "safety stock",
            "OTIF",
            "LTL",
            "FTL",
            "ETA",
            "S&OP",
            "STO",
            "HS code",
            "cycle count",
            "days of cover",
        ],
    },
    CS: {
        "roles": [
            (
                "customer support agent",
                "Customer Support",
                ["junior"],
                [
                    "answers refund questions by chat all day",
                    "logs cases from phone calls during the evening shift",
                ],
            ),
            (
                "tier-2 support specialist",
                "Customer Support",
                ["mid"],
                [
                    "handles escalations from unhappy key customers",
                    "reproduces app problems before handing them to engineering",
                ],
            ),
            (
                "contact center team lead",
                "Contact Center",
                ["lead"],
                [
                    "watches the queue dashboard during peak season",
                    "coaches new agents on the refund policy",
                ],
            ),
            (
                "returns and refunds coordinator",
                "Customer Operations",
                ["junior", "mid"],
                [
                    "processes returns from the web shop and the stores",
                    "approves replacement shipments for damaged goods",
                ],
            ),
            (
                "customer experience manager",
                "Customer Experience",
                ["senior"],
                [
                    "reviews CSAT comments every Monday",
                    "designs goodwill rules for service recovery",
                ],
            ),
            (
                "head of customer service",
                "Customer Service",
                ["director"],
                [
                    "reports SLA performance to the executive team",
                    "decides on staffing for the holiday peak",
                ],
            ),
            (
                "social media care agent",
                "Customer Support",
                ["junior", "mid"],
                [
                    "answers public complaints on social channels",
                    "moves angry posts into private support cases",
                ],
            ),
        ],
        "pains": [
            "hates making customers repeat their order number",
            "gets anxious when cases are about to breach SLA",
            "is annoyed by refunds that need three approvals",
            "dislikes switching between five tools per call",
            "gets frustrated by duplicate customer records",
        ],
        "jargon": ["RMA", "SLA", "CSAT", "FCR", "AHT", "goodwill", "tier 2", "macro", "escalation", "NPS"],
    },
    ITSM: {
        "roles": [
            (
                "service desk analyst",
                "IT Service Desk",
                ["junior"],
                [
                    "resets passwords and unlocks accounts from the first call of the day",
                    "logs incidents for users who cannot describe the problem",
                ],
            ),
            (
                "IT support engineer",
                "Workplace Technology",
                ["mid"],
                [
                    "rolls out new laptops to a remote workforce",
                    "installs software that users request through the portal",
                ],
            ),
            (
                "change manager",
                "IT Operations",
                ["senior"],
                [
                    "chairs the weekly change advisory board",
                    "reviews every emergency change the morning after",
                ],
            ),
            (
                "identity and access administrator",
                "IT Security",
                ["mid", "senior"],
                [
                    "provisions access for joiners and removes it for leavers",
                    "enrols and resets second-factor devices",
                ],
            ),
            (
                "site IT lead",
                "IT Operations",
                ["lead"],
                [
                    "triages incidents coming in from three time zones",
                    "coordinates network fixes with the local facilities team",
                ],
            ),
            (
                "head of IT service management",
                "IT",
                ["director"],
                [
                    "reports SLA compliance to the CIO",
                    "decides which problems get a permanent fix first",
                ],
            ),
            (
                "SAP basis administrator",
                "Enterprise Applications",
                ["senior"],
                [
                    "keeps certificates and licences from expiring",
                    "unlocks SAP users after every password policy change",
                ],
            ),
        ],
        "pains": [
            "hates tickets that just say 'it does not work'",
            "gets impatient with emergency changes raised on Friday evening",
            "worries about shared accounts nobody owns",
            "is tired of users who bypass the portal",
            "dreads the monthly patch weekend",
        ],
        "jargon": ["INC", "CHG", "CAB", "SSO", "MFA", "CMDB", "P1", "SLA breach", "AD", "RFC", "KB article"],
    },
    MFG: {
        "roles": [
            (
                "production supervisor",
                "Production",
                ["mid", "lead"],
                [
                    "runs the morning production meeting on the shop floor",
                    "confirms production orders at the end of each shift",
                ],
            ),
            (
                "maintenance planner",
                "Maintenance",
                ["mid", "senior"],
                [
                    "plans preventive maintenance around the production schedule",
                    "bundles repair jobs into the next shutdown",
                ],
            ),
            (
                "quality inspector",
                "Quality Assurance",
                ["junior", "mid"],
                [
                    "inspects incoming batches from suppliers",
                    "records final inspection results before batches ship",
                ],
            ),
            (
                "plant manager",
                "Operations",
                ["director"],
                [
                    "chases OEE losses on the bottleneck line",
                    "signs off capital requests for new equipment",
                ],
            ),
            (
                "process engineer",
                "Manufacturing Engineering",
                ["mid", "senior"],
                [
                    "investigates scrap spikes with the quality team",
                    "writes engineering change requests for routing updates",
                ],
            ),
            (
                "reliability engineer",
                "Maintenance",
                ["senior"],
                [
                    "watches condition-monitoring alerts on critical pumps",
                    "analyses failure history to extend maintenance intervals",
                ],
            ),
            (
                "packaging line shift lead",
                "Production",
                ["lead"],
                [
                    "logs every stop on the packaging line",
                    "hands over open issues to the next shift",
                ],
            ),
        ],
        "pains": [
            "hates unplanned downtime on the night shift",
            "gets frustrated when spare parts are out of stock",
            "is impatient with paperwork that keeps people off the line",
            "worries about batches released too early",
            "finds the maintenance backlog overwhelming",
        ],
        "jargon": [
            "OEE",
            "MTBF",
            "MTTR",
            "PM",
            "work order",
            "BOM",
            "routing",
            "NCR",
            "rework",
            "changeover",
            "CAPA",
            "first-pass yield",
        ],
    },
    FAC: {
        "roles": [
            (
                "facility manager",
                "Facilities",
                ["mid", "senior"],
                [
                    "handles repair requests across four office buildings",
                    "tracks energy use against the sustainability target",
                ],
            ),
            (
                "workplace coordinator",
                "Workplace Services",
                ["junior", "mid"],
                [
                    "keeps meeting rooms and desks bookable for a hybrid workforce",
                    "sets up rooms for town halls and trainings",
                ],
            ),
            (
                "office manager",
                "Administration",
                ["mid"],
                [
                    "orders supplies and arranges couriers for the whole office",
                    "issues badges and parking permits to new joiners",
                ],
            ),
            (
                "real estate portfolio manager",
                "Corporate Real Estate",
                ["senior", "lead"],
                [
                    "manages lease renewals for regional offices",
                    "compares occupancy data before every lease decision",
                ],
            ),
            (
                "head of workplace",
                "Facilities",
                ["director"],
                [
                    "plans office moves after every reorganisation",
                    "sets the hybrid work policy with HR",
                ],
            ),
            (
                "reception team lead",
                "Front Office",
                ["lead"],
                [
                    "organises visitor access for large customer events",
                    "keeps the lost-and-found and the visitor log in order",
                ],
            ),
            (
                "EHS coordinator",
                "Environment, Health and Safety",
                ["mid", "senior"],
                [
                    "runs fire drills in every building twice a year",
                    "follows up on reported safety hazards",
                ],
            ),
        ],
        "pains": [
            "hates no-show bookings that block rooms",
            "gets annoyed by HVAC complaints that lack a location",
            "worries about lease notice deadlines slipping",
            "is tired of visitors arriving unannounced",
            "loses patience with requests sent by personal email",
        ],
        "jargon": [
            "hot desk",
            "occupancy",
            "FM ticket",
            "HVAC",
            "lease break",
            "CAM charges",
            "space utilisation",
            "badge access",
            "move management",
            "sqm",
        ],
    },
    MKT: {
        "roles": [
            (
                "marketing operations specialist",
                "Marketing Operations",
                ["mid"],
                [
                    "builds audience segments and keeps consent data clean",
                    "fixes broken UTM tracking before every launch",
                ],
            ),
            (
                "campaign manager",
                "Demand Generation",
                ["mid", "senior"],
                [
                    "launches email campaigns every week",
                    "hands qualified leads to sales after every webinar",
                ],
            ),
            (
                "content marketer",
                "Content",
                ["junior", "mid"],
                [
                    "writes blog posts and customer case studies",
                    "keeps the asset library tidy for the regional teams",
                ],
            ),
            (
                "events manager",
                "Field Marketing",
                ["mid", "senior"],
                [
                    "organises trade show presence in three countries",
                    "imports badge scans into the CRM after every event",
                ],
            ),
            (
                "paid media specialist",
                "Performance Marketing",
                ["junior", "mid"],
                [
                    "manages the paid search budget against a cost-per-lead target",
                    "tests new audiences on paid social",
                ],
            ),
            (
                "head of brand",
                "Brand",
                ["director"],
                [
                    "approves every creative that carries the logo",
                    "tracks share of voice against the main competitors",
                ],
            ),
            (
                "chief marketing officer",
                "Marketing",
                ["executive"],
                [
                    "reports pipeline influenced by marketing to leadership",
                    "decides how the budget is split across channels",
                ],
            ),
        ],
        "pains": [
            "hates campaigns that stall in legal review",
            "gets frustrated when UTM tags are missing",
            "worries about sending to contacts without consent",
            "is impatient with slow creative approvals",
            "dislikes reports that do not agree with the CRM",
        ],
        "jargon": [
            "MQL",
            "SQL",
            "CPL",
            "CTR",
            "UTM",
            "nurture",
            "lookalike",
            "A/B test",
            "attribution",
            "opt-in",
            "ROAS",
        ],
    },
    TE: {
        "roles": [
            (
                "travel coordinator",
                "Travel Management",
                ["junior", "mid"],
                [
                    "books flights and hotels for a team that travels every week",
                    "rebooks travellers when flights are cancelled",
                ],
            ),
            (
                "expense auditor",
                "Finance Shared Services",
                ["mid"],
                [
                    "audits expense reports for policy breaches",
                    "sends back claims with missing receipts",
                ],
            ),
            (
                "sales engineer who travels most weeks",
                "Sales Engineering",
                ["mid", "senior"],
                [
                    "submits expense reports from airport lounges",
                    "books last-minute trips to customer sites",
                ],
            ),
            (
                "executive assistant to the leadership team",
                "Executive Office",
                ["mid", "senior"],
                [
                    "arranges multi-city trips for the executive team",
                    "keeps the executives' traveler profiles and passports up to date",
                ],
            ),
            (
                "travel manager",
                "Procurement",
                ["lead", "senior"],
                [
                    "negotiates hotel and airline rates for the company",
                    "tracks travel spend and carbon emissions by department",
                ],
            ),
            (
                "management consultant on the road four days a week",
                "Professional Services",
                ["junior", "mid"],
                [
                    "claims per diems and mileage after every client visit",
                    "splits expenses between client projects",
                ],
            ),
            (
                "head of travel and expense",
                "Finance",
                ["director"],
                [
                    "owns the travel policy and its exceptions",
                    "approves expense reports from the whole finance team",
                ],
            ),
        ],
        "pains": [
            "hates losing paper receipts",
            "gets impatient when expense reimbursements take weeks",
            "is annoyed by policy limits that ignore city prices",
            "worries about travellers in risky countries",
            "finds rebooking cancelled flights exhausting",
        ],
        "jargon": [
            "per diem",
            "T&E",
            "PNR",
            "out-of-policy",
            "lodge card",
            "duty of care",
            "mileage claim",
            "pre-trip approval",
            "corporate rate",
            "receipt capture",
        ],
    },
    LEGAL: {
        "roles": [
            (
                "commercial counsel",
                "Legal",
                ["mid", "senior"],
                [
                    "reviews sales contracts and NDAs under time pressure",
                    "negotiates liability caps with customers' lawyers",
                ],
            ),
            (
                "contract manager",
                "Legal Operations",
                ["mid"],
                [
                    "keeps the contract repository complete",
                    "sends final contracts out for e-signature",
                ],
            ),
            (
                "compliance officer",
                "Compliance",
                ["senior", "lead"],
                [
                    "runs the annual code of conduct attestation",
                    "reviews the gifts and hospitality register every quarter",
                ],
            ),
            (
                "paralegal",
                "Legal",
                ["junior", "mid"],
                [
                    "manages legal holds for ongoing litigation",
                    "tracks filing deadlines for the litigation team",
                ],
            ),
            (
                "data protection officer",
                "Privacy",
                ["senior", "lead"],
                [
                    "answers data subject requests within the statutory deadline",
                    "signs off privacy impact assessments for new projects",
                ],
            ),
            (
                "general counsel",
                "Legal",
                ["executive"],
                [
                    "briefs the board on litigation exposure",
                    "decides which matters go to outside counsel",
                ],
            ),
            (
                "trade compliance analyst",
                "Global Trade Compliance",
                ["mid"],
                [
                    "screens new business partners against sanctions lists",
                    "classifies products for export control",
                ],
            ),
        ],
        "pains": [
            "hates contracts sent for review the day before signing",
            "gets nervous about missed regulatory deadlines",
            "distrusts templates that were edited without tracking changes",
            "is wary of gifts to public officials",
            "loses patience with outside counsel invoices that ignore billing guidelines",
        ],
        "jargon": [
            "NDA",
            "MSA",
            "SOW",
            "DSAR",
            "legal hold",
            "KYC",
            "denied-party screening",
            "ABAC",
            "redline",
            "governing law",
            "DPA",
        ],
    },
}

COMPANY_SIZES = [
    "a 200-person",
    "a mid-sized",
    "a large multinational",
    "a family-owned",
    "a fast-growing",
    "a publicly listed",
    "a private-equity-backed",
    "a 5,000-employee",
    "a century-old",
    "a venture-funded",
]
# Industries that make or move physical goods, and the rest; shop-floor and warehouse personas
# only work for the first kind.
GOODS_INDUSTRIES = [
    "industrial machinery maker",
    "pharmaceutical company",
    "food and beverage producer",
    "automotive supplier",
    "chemicals company",
    "medical device manufacturer",
    "furniture maker",
    "consumer electronics brand",
]
SERVICE_INDUSTRIES = [
    "logistics provider",
    "regional bank",
    "software vendor",
    "hospital group",
    "energy utility",
    "fashion retailer",
    "telecom operator",
    "engineering consultancy",
]
GOODS_ONLY_LOBS = (MFG, SCM)
REGIONS = [
    "in Hamburg",
    "in Ohio",
    "in Singapore",
    "in Sao Paulo",
    "across the Nordics",
    "in northern Italy",
    "in Texas",
    "in Bangalore",
    "in Lyon",
    "in Ontario",
    "in Melbourne",
    "in the Netherlands",
    "in Mexico City",
    "in Poland",
    "in Dubai",
    "in Osaka",
    "in the English Midlands",
    "in Johannesburg",
]
TONES = {
    "terse": "writes in clipped fragments without greetings",
    "formal": "writes in complete, courteous sentences",
    "friendly": "keeps every exchange warm and informal",
    "impatient": "wants answers immediately",
    "chatty": "tends to add background nobody asked for",
    "precise": "quotes exact document numbers and dates",
    "anxious": "double-checks every step before confirming",
    "skeptical": "questions anything the system suggests",
}
TEMPLATES = [
    "{A} {role} at {company} {region} who {duty} and {pain}.",
    "{Role} at {company} {region}. Day to day this person {duty}, and {pain}.",
    "Works as {a} {role} for {company} {region}, {duty}, and {pain}.",
    "{A} {role} with {years} years of experience, now at {company} {region}, who {duty} and {pain}.",
    "{A} {role} at {company} {region} who {duty} and {pain}. In messages this person {tone_habit}.",
    "{Role} ({years} years in the job) at {company} {region}. {Duty}, {pain}, and {tone_habit}.",
]
# Plausible years of experience for each seniority level.
YEARS_BY_SENIORITY = {
    "junior": (1, 3),
    "mid": (3, 8),
    "senior": (7, 15),
    "lead": (8, 18),
    "director": (12, 25),
    "executive": (15, 30),
}
PERSONAS_PER_LOB = 28


def _article(word: str) -> str:
    return (
        "an" if word[:1].lower() in "aeio" or word.startswith(("FP&A", "HR ", "SAP", "IT ", "EHS")) else "a"
    )


def build_personas(rng: random.Random) -> list[dict[str, Any]]:
    """Compose PERSONAS_PER_LOB personas per line of business, round-robin over the lines."""
    per_lob: dict[str, list[dict[str, Any]]] = {}
    seen: set[str] = set()
    for lob in LINES_OF_BUSINESS:
        kit = PERSONA_KIT[lob]
        out: list[dict[str, Any]] = []
        industries = GOODS_INDUSTRIES if lob in GOODS_ONLY_LOBS else GOODS_INDUSTRIES + SERVICE_INDUSTRIES
        while len(out) < PERSONAS_PER_LOB:
            role, department, seniorities, duties = kit["roles"][len(out) % len(kit["roles"])]
            seniority = rng.choice(seniorities)
            tone = rng.choice(sorted(TONES))
            duty = rng.choice(duties)
            fields = {
                "role": role,
                "Role": role[:1].upper() + role[1:],
                "a": _article(role),
                "A": _article(role).capitalize(),
                "company": f"{rng.choice(COMPANY_SIZES)} {rng.choice(industries)}",
                "region": rng.choice(REGIONS),
                "duty": duty,
                "Duty": duty[:1].upper() + duty[1:],
                "pain": rng.choice(kit["pains"]),
                "years": str(rng.randint(*YEARS_BY_SENIORITY[seniority])),
                "tone_habit": TONES[tone],
            }
            description = rng.choice(TEMPLATES).format(**fields)
            if description in seen:
                continue
            seen.add(description)
            out.append(
                {
                    "description": description,
                    "role": role,
                    "department": department,
                    "line_of_business": lob,
                    "seniority": seniority,
                    "tone": tone,
                    "jargon": rng.sample(kit["jargon"], rng.randint(2, 4)),
                }
            )
        per_lob[lob] = out
    personas: list[dict[str, Any]] = []
    for i in range(PERSONAS_PER_LOB):
        for lob in LINES_OF_BUSINESS:
            rec = {"id": f"p{len(personas) + 1:04d}", **per_lob[lob][i]}
            personas.append(Persona.model_validate(rec).model_dump(mode="json"))
    return personas


# ============================================================================================
# Composition, validation, output
# ============================================================================================

NAME_RE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")


def _resolve(ref: Any) -> tuple[str, dict[str, Any]]:
    if isinstance(ref, str):
        return ref, param(ref)
    key, override = ref
    return key, param(key, override)


def _check_property(tool: str, key: str, spec: dict[str, Any]) -> None:
    """Every property must be concrete enough for a typed value generator."""
    where = f"{tool}.{key}"
    if not spec.get("description"):
        raise ValueError(f"{where}: missing description")
    kind = spec.get("type")
    if kind not in ("string", "integer", "number", "boolean", "array", "object"):
        raise ValueError(f"{where}: missing or unexpected type {kind!r}")
    if key.endswith("_id") and not ("pattern" in spec or "enum" in spec):
        raise ValueError(f"{where}: identifiers need a pattern or an enum")
    if kind in ("integer", "number") and not ("minimum" in spec and "maximum" in spec):
        raise ValueError(f"{where}: numbers need a minimum and a maximum")
    if kind == "string" and not ({"pattern", "enum", "format"} & spec.keys() or "maxLength" in spec):
        raise ValueError(f"{where}: strings need a pattern, enum, format or maxLength")
    if kind == "array":
        items = spec.get("items")
        if not isinstance(items, dict) or "type" not in items:
            raise ValueError(f"{where}: arrays need typed items")
    if kind == "object" and not spec.get("properties"):
        raise ValueError(f"{where}: objects need properties")


def _sentences(textline: str) -> int:
    return len(re.findall(r"[.!?](\s|$)", textline))


def build_tools() -> list[dict[str, Any]]:
    """Compose every ToolSpec into a validated catalogue record."""
    tools: list[dict[str, Any]] = []
    names: set[str] = set()
    family_split: dict[str, str] = {}
    for spec in SPECS:
        if not NAME_RE.match(spec.name):
            raise ValueError(f"{spec.name}: not snake_case")
        if spec.name in names:
            raise ValueError(f"{spec.name}: duplicate tool name")
        names.add(spec.name)
        if "{" in spec.description or "}" in spec.description:
            raise ValueError(f"{spec.name}: unfilled template field in description")
        if not 1 <= _sentences(spec.description) <= 3:
            raise ValueError(f"{spec.name}: description must be 1-3 sentences: {spec.description!r}")
        props: dict[str, dict[str, Any]] = {}
        for ref in [*spec.required, *spec.optional]:
            key, schema = _resolve(ref)
            if key in props:
                raise ValueError(f"{spec.name}: parameter {key} declared twice")
            _check_property(spec.name, key, schema)
            props[key] = schema
        split = "heldout" if spec.lob in HELDOUT_LOBS else "train"
        if family_split.setdefault(spec.family, split) != split:
            raise ValueError(f"family {spec.family} spans both splits")
        record_ = {
            "name": spec.name,
            "description": spec.description,
            "parameters": {
                "type": "object",
                "properties": props,
                "required": [_resolve(r)[0] for r in spec.required],
            },
            "metadata": {"line_of_business": spec.lob, "family": spec.family, "split": split},
        }
        tools.append(Tool.model_validate(record_).model_dump(mode="json"))
    # Group by line of business (stable, so families stay together in definition order).
    tools.sort(key=lambda t: LINES_OF_BUSINESS.index(t["metadata"]["line_of_business"]))
    return tools


def _write_json(path: Path, obj: Any) -> None:
    path.write_text(json.dumps(obj, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    lines = [json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def summarise(tools: list[dict[str, Any]], personas: list[dict[str, Any]]) -> None:
    by_lob = Counter(t["metadata"]["line_of_business"] for t in tools)
    by_split = Counter(t["metadata"]["split"] for t in tools)
    families = Counter(t["metadata"]["family"] for t in tools)
    sizes = Counter(families.values())
    with_required = sum(1 for t in tools if t["parameters"]["required"])
    no_params = sum(1 for t in tools if not t["parameters"]["properties"])
    req_counts = Counter(len(t["parameters"]["required"]) for t in tools)
    print(f"tools: {len(tools)} in {len(by_lob)} lines of business, {len(families)} families")
    for lob in LINES_OF_BUSINESS:
        split = "heldout" if lob in HELDOUT_LOBS else "train"
        print(f"  {lob:<28} {by_lob[lob]:>4}  ({split})")
    print(f"split: train {by_split['train']}, heldout {by_split['heldout']}")
    print("family sizes: " + ", ".join(f"{k} x{v}" for k, v in sorted(sizes.items())))
    print(
        f"with required parameters: {with_required} ({with_required / len(tools):.1%}); no parameters at all: {no_params}"
    )
    print("required-parameter counts: " + ", ".join(f"{k}: {v}" for k, v in sorted(req_counts.items())))
    per_lob = Counter(p["line_of_business"] for p in personas)
    print(f"personas: {len(personas)} over {len(per_lob)} lines of business")


def main() -> int:
    rng = random.Random(SEED)
    tools = build_tools()
    personas = build_personas(rng)
    ASSETS.mkdir(parents=True, exist_ok=True)
    _write_json(ASSETS / "catalogue.json", tools)
    _write_json(ASSETS / "catalogue_train.json", [t for t in tools if t["metadata"]["split"] == "train"])
    _write_json(ASSETS / "catalogue_heldout.json", [t for t in tools if t["metadata"]["split"] == "heldout"])
    _write_jsonl(ASSETS / "personas.jsonl", personas)
    summarise(tools, personas)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
