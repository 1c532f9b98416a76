//! generated/params.rs: one typed parameter struct per action, parsed with SnowLuma's own
//! coercion rules (see runtime/catalog/coerce.rs), and a `check_*` function per action.

use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;
use serde_json::Value;

use crate::ir::{Action, Catalog, Param, Rule};

pub fn emit(catalog: &Catalog) -> TokenStream {
    let items = catalog.actions.iter().map(action_items);
    quote! {
        use crate::catalog::facade::*;
        #(#items)*
    }
}

fn ident(name: &str) -> Ident {
    match name.strip_prefix("r#") {
        Some(raw) => Ident::new_raw(raw, Span::call_site()),
        None => syn::parse_str::<Ident>(name)
            .unwrap_or_else(|_| Ident::new_raw(name, Span::call_site())),
    }
}

fn rust_type(param: &Param) -> TokenStream {
    match param.ty.as_str() {
        "uint" => quote!(Uint),
        "int" => quote!(Int),
        "message_id" => quote!(MessageId),
        "number" => quote!(Number),
        "string" => quote!(Text),
        "bool" => quote!(Flag),
        "message" => quote!(Message),
        "enum" => quote!(Choice),
        "string[]" => quote!(Vec<Text>),
        "uint[]" => quote!(Vec<Uint>),
        _ => quote!(Raw),
    }
}

/// A Rust expression for a param's default, for the types where one is a plain literal.
fn default_expr(param: &Param) -> Option<TokenStream> {
    let value = param.default.as_ref()?;
    match param.ty.as_str() {
        "uint" => value.as_u64().map(|n| quote!(Uint(#n))),
        "int" => value.as_i64().map(|n| quote!(Int(#n))),
        "number" => value.as_f64().map(|n| quote!(Number(#n))),
        "bool" => value.as_bool().map(|b| quote!(Flag(#b))),
        "string" => value.as_str().map(|s| quote!(Text(#s.to_string()))),
        _ => None,
    }
}

fn literal(value: &Value) -> TokenStream {
    match value {
        Value::String(s) => quote!(Literal::Str(#s)),
        Value::Bool(b) => quote!(Literal::Bool(#b)),
        Value::Number(n) if n.is_i64() => {
            let n = n.as_i64().unwrap_or_default();
            quote!(Literal::Int(#n))
        }
        other => {
            let text = other.to_string();
            quote!(Literal::Str(#text))
        }
    }
}

fn bounds(param: &Param) -> TokenStream {
    let mut fields = Vec::new();
    if let Some(n) = param.minimum {
        fields.push(quote!(minimum: Some(#n)));
    }
    if let Some(n) = param.maximum {
        fields.push(quote!(maximum: Some(#n)));
    }
    if let Some(n) = param.min_length {
        fields.push(quote!(min_length: Some(#n)));
    }
    if let Some(n) = param.min_items {
        fields.push(quote!(min_items: Some(#n)));
    }
    if let Some(n) = param.item_min_length {
        fields.push(quote!(item_min_length: Some(#n)));
    }
    if param.non_zero {
        fields.push(quote!(non_zero: true));
    }
    // A raw param's values belong to its `as_string_in` check, not to a coercion.
    if !param.values.is_empty() && param.ty != "raw" {
        let values = param.values.iter().map(literal);
        fields.push(quote!(values: &[#(#values),*]));
    }
    if fields.is_empty() {
        quote!(&Bounds::NONE)
    } else {
        quote!(&Bounds { #(#fields,)* ..Bounds::NONE })
    }
}

/// The `Check` variant of a check that takes no data.
fn check_variant(check: &str) -> Option<TokenStream> {
    Some(match check {
        "truthy" => quote!(Truthy),
        "non_zero_number" => quote!(NonZeroNumber),
        "path_list" => quote!(PathList),
        "array" => quote!(Array),
        "even_hex" => quote!(EvenHex),
        _ => return None,
    })
}

fn action_items(action: &Action) -> TokenStream {
    let struct_ident = ident(&action.struct_ident);
    let check_ident = ident(&format!("check_{}", action.fn_ident));
    let doc = format!(" `{}`: {}", action.name, action.summary);
    let mut fields = Vec::new();
    let mut parses = Vec::new();
    // Undeclared params are read by SnowLuma's action body without coercion, so they are not
    // typed here either: they stay in `extra` and are forwarded as sent.
    let declared: Vec<&Param> = action.params.iter().filter(|p| !p.undeclared).collect();
    for param in &declared {
        let field = ident(&param.field_ident);
        let name = &param.name;
        let ty = rust_type(param);
        let bounds = bounds(param);
        let field_doc = format!(" `{}`: {}", param.name, param.description);
        let serde_name = quote!(#[serde(rename = #name)]);
        if param.required {
            fields.push(quote! { #[doc = #field_doc] #serde_name pub #field: #ty, });
            parses.push(quote! { #field: required(params, #name, #bounds)?, });
        } else if let Some(default) = default_expr(param) {
            fields.push(quote! { #[doc = #field_doc] #serde_name pub #field: #ty, });
            parses.push(quote! { #field: defaulted(params, #name, #bounds, || #default)?, });
        } else {
            fields.push(quote! {
                #[doc = #field_doc]
                #serde_name
                #[serde(skip_serializing_if = "Option::is_none")]
                pub #field: Option<#ty>,
            });
            parses.push(quote! { #field: optional(params, #name, #bounds)?, });
        }
    }
    let known = declared.iter().map(|p| &p.name);
    let body_checks = action.params.iter().filter_map(|param| {
        let name = &param.name;
        let variant = match param.check.as_deref()? {
            "as_string_in" => {
                let values = param.values.iter().filter_map(Value::as_str);
                quote!(AsStringIn(&[#(#values),*]))
            }
            other => check_variant(other)?,
        };
        Some(quote! { check(params, #name, Check::#variant)?; })
    });
    let invariants = action.invariants.iter().filter_map(|invariant| {
        let text = &invariant.text;
        match &invariant.rule {
            Rule::AnyOf(fields) => Some(quote! { any_of(params, &[#(#fields),*], #text)?; }),
            Rule::RequiredWhen {
                field,
                param,
                values,
                check,
            } => {
                let values = values.iter().map(literal);
                Some(match check.as_deref().and_then(check_variant) {
                    None => {
                        quote! { required_when(params, #field, #param, &[#(#values),*], #text)?; }
                    }
                    Some(variant) => quote! {
                        required_when_check(params, #field, #param, &[#(#values),*], Check::#variant, #text)?;
                    },
                })
            }
            Rule::FirstTruthyString(fields) => {
                Some(quote! { first_truthy_string(params, &[#(#fields),*], #text)?; })
            }
            Rule::Documented => None,
        }
    });
    quote! {
        #[doc = #doc]
        #[derive(Debug, Clone, Serialize)]
        pub struct #struct_ident {
            #(#fields)*
            /// Keys the catalog does not declare; SnowLuma ignores them, they are kept as sent.
            #[serde(flatten)]
            pub extra: Map<String, Value>,
        }

        impl FromParams for #struct_ident {
            fn from_params(params: &Map<String, Value>) -> Result<Self, ParamError> {
                let parsed = Self {
                    #(#parses)*
                    extra: unknown_keys(params, &[#(#known),*]),
                };
                #(#invariants)*
                #(#body_checks)*
                Ok(parsed)
            }
        }

        pub fn #check_ident(params: &Map<String, Value>) -> Result<(), ParamError> {
            #struct_ident::from_params(params).map(drop)
        }
    }
}
